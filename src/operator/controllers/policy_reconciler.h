#ifndef GPUOP_OPERATOR_CONTROLLERS_POLICY_RECONCILER_H_
#define GPUOP_OPERATOR_CONTROLLERS_POLICY_RECONCILER_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "kube/client/client.h"
#include "kube/controller/controller.h"
#include "kube/events/event_recorder.h"
#include "operator/cache/cache.h"
#include "operator/operands/applier.h"

namespace gpuop::op {

struct PolicyReconcilerOptions {
  std::string ns = "gpuop-system";  // where the operands live
  // Every this long the operands are compared with the cluster even without a change (repairs
  // hand edits and deletions). Between resyncs an unchanged policy costs no API request.
  absl::Duration resync = absl::Minutes(10);
  // Retry delay after a failed write.
  absl::Duration retry = absl::Seconds(10);
  kube::EventRecorder* recorder = nullptr;  // Events on the policy; none when null
  const common::Clock* clock = &common::Clock::Real();
};

// Reconciles the GPUClusterPolicy "default" (the only key) and the GPUNodePools:
//  - renders the operands from the policy and the valid pools and syncs them (server-side
//    apply of what changed, prune of what is no longer rendered) when the rendering changed or
//    the resync is due; while a policy does not parse, the last spec of it that did keeps
//    running (and is still repaired), or, when this process never saw one, nothing changes;
//    its status says why (InvalidSpec, naming the field); a deleted policy prunes every
//    operand;
//  - writes the policy's status (conditions Ready/Progressing/Degraded, nodes, components) and
//    every pool's status (nodes, conflicts), each only when it changed;
//  - records an Event when Ready changes and for each failed write.
// Reads the cache; writes through the client. Runs on one worker (one key).
class PolicyReconciler {
 public:
  PolicyReconciler(kube::Client& client, OperatorCache& cache, PolicyReconcilerOptions options);

  [[nodiscard]] absl::StatusOr<kube::Result> Reconcile(const std::string& key);

  // The last sync's report (for metrics and tests).
  ApplyReport last_report() const;

 private:
  // `invalid`: why the spec cannot be used (InvalidSpec conditions), or OK.
  // `driver_os`: DriverOsInUse() of this pass.
  absl::Status WritePolicyStatus(const PolicyEntry& entry, const absl::Status& invalid,
                                 const std::vector<NodePool>& pools,
                                 const std::map<std::string, std::set<std::string>>& driver_os,
                                 absl::Time now);
  absl::Status WritePoolStatuses(const std::vector<NodePool>& pools, absl::Time now);
  // The gpuop.io/driver.os values of the nodes per driver pool ("" for the policy's), with the
  // values nodes are moving to (gpuop.io/driver-pool-target, gpuop.io/driver-os-target).
  std::map<std::string, std::set<std::string>> DriverOsInUse() const;
  void RecordReady(const PolicyEntry& entry, const nlohmann::json& status);

  kube::Client& client_;
  OperatorCache& cache_;
  const PolicyReconcilerOptions options_;
  OperandApplier applier_;

  mutable absl::Mutex mu_;
  std::optional<uint64_t> applied_hash_ ABSL_GUARDED_BY(mu_);
  absl::Time next_resync_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  ApplyReport last_report_ ABSL_GUARDED_BY(mu_);
  // What was last written (or read at start), to keep lastTransitionTime and skip no-op writes.
  std::optional<nlohmann::json> policy_status_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, nlohmann::json> pool_statuses_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpuop::op

#endif  // GPUOP_OPERATOR_CONTROLLERS_POLICY_RECONCILER_H_
