#ifndef GPUOP_OPERATOR_REMEDIATION_REMEDIATION_CONTROLLER_H_
#define GPUOP_OPERATOR_REMEDIATION_REMEDIATION_CONTROLLER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "kube/client/client.h"
#include "kube/controller/controller.h"
#include "kube/events/event_recorder.h"
#include "operator/cache/cache.h"
#include "operator/cache/write_tracker.h"
#include "operator/remediation/planner.h"

namespace gpuop::op::remediation {

struct RemediationControllerOptions {
  std::string ns = "gpuop-system";        // where the driver and validator pods run
  const common::Clock* clock = nullptr;   // null: the real clock
  kube::EventRecorder* events = nullptr;  // null: no Events
  kube::ControllerMetrics* metrics = nullptr;
  // While a node is in remediation, reconcile again this often (timeouts, evictions to retry).
  absl::Duration resync = absl::Seconds(5);
};

// Returns unhealthy GPU nodes to service with the policy's remediation steps (see
// PlanRemediation). A single key: each pass reads the managed GPU nodes and the operand pods
// from the cache, lists the pods of nodes in the Drain step, plans, evicts or deletes pods, and
// writes each node that changes in one merge patch: the state label, the step, since, message and
// attempts annotations, the taint and the reboot annotation. Events on the Node for every step.
// Does nothing without a valid policy "default".
// Thread-safe.
class RemediationController {
 public:
  static constexpr char kKey[] = "remediation";

  RemediationController(kube::Client& client, OperatorCache& cache,
                        RemediationControllerOptions options);
  ~RemediationController();

  // Handlers on the cache that call `trigger` when a Node's health, labels, annotations,
  // taints or readiness change, or a driver or validator pod does. Before the cache starts.
  static void WatchCache(OperatorCache& cache, std::function<void()> trigger);

  [[nodiscard]] absl::Status Start();
  void Stop();
  void Enqueue() { loop_->Enqueue(kKey); }

  // One pass (what the loop runs).
  [[nodiscard]] absl::StatusOr<kube::Result> Reconcile();

 private:
  std::vector<NodeState> BuildSnapshot(const PolicySpec& policy, std::vector<std::string>& errors);
  absl::Status Execute(const NodePlan& plan, const RemediationSpec& spec, absl::Time now);

  kube::Client& client_;
  OperatorCache& cache_;
  const RemediationControllerOptions options_;
  const common::Clock& clock_;
  absl::Mutex mu_;
  WriteTracker writes_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<kube::Controller> loop_;
};

}  // namespace gpuop::op::remediation

#endif  // GPUOP_OPERATOR_REMEDIATION_REMEDIATION_CONTROLLER_H_
