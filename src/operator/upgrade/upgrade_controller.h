#ifndef GPUOP_OPERATOR_UPGRADE_UPGRADE_CONTROLLER_H_
#define GPUOP_OPERATOR_UPGRADE_UPGRADE_CONTROLLER_H_

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "kube/client/client.h"
#include "kube/controller/controller.h"
#include "kube/events/event_recorder.h"
#include "metrics/registry.h"
#include "operator/cache/cache.h"
#include "operator/cache/write_tracker.h"
#include "operator/upgrade/executor.h"
#include "operator/upgrade/planner.h"
#include "operator/upgrade/revisions.h"
#include "operator/upgrade/snapshot.h"

namespace gpuop::op::upgrade {

struct UpgradeControllerOptions {
  // The operator's namespace: its driver DaemonSets, their pods and ControllerRevisions.
  std::string ns = "gpuop-system";
  // Null: the real clock. Must outlive the controller.
  const common::Clock* clock = nullptr;
  // Null: no Events. Must outlive the controller.
  kube::EventRecorder* events = nullptr;
  // Null: no metrics. Registers gpuop_driver_upgrade_nodes{state} (gauge),
  // gpuop_driver_upgrade_transitions_total{state} and gpuop_driver_upgrade_errors_total.
  metrics::Registry* metrics = nullptr;
  // While a node is upgrading, reconcile again this often (timeouts, retries of failed
  // actions, pods that come and go without an event the cache sees).
  absl::Duration resync = absl::Seconds(5);
  // After writing a Node, plan again only once the cache shows the write (else a stale cache
  // would let a second pass start more nodes than the slots allow), or after this long.
  absl::Duration cache_lag_limit = absl::Seconds(30);
};

// One node's place in the upgrade, for status ("kubectl gpu status", the policy's conditions).
struct NodeUpgradeStatus {
  std::string node;
  UpgradeState state = UpgradeState::kUnknown;
  std::string message;  // NodePlan::Describe()
};

struct UpgradeStatus {
  UpgradeCounts counts;
  // Nodes neither done nor unknown, by name.
  std::vector<NodeUpgradeStatus> nodes;
};

// Drives rolling driver upgrades. A single key ("upgrade"): each pass reads every managed GPU
// node, the driver DaemonSets and the operand pods from the OperatorCache, lists the pods of the
// nodes that are waiting for jobs, deleting GPU pods or draining (fieldSelector
// spec.nodeName=...), plans with Plan() and carries the plan out with an Executor. It reconciles
// again on changes to Nodes, driver and validator pods, driver DaemonSets and the policy, and
// every `resync` while a node is upgrading. A failed action is retried on the next pass; the
// time it takes counts toward its state's timeout. Does nothing without a valid policy "default"
// with the driver enabled.
//
// The cache's events reach it through WatchCache(), registered once before the cache starts
// (the operator's cache outlives its controllers, which run only while it leads). Start() after
// the cache has synced; Stop() (or destroy) before the cache is destroyed.
// Thread-safe.
class UpgradeController {
 public:
  static constexpr char kKey[] = "upgrade";

  UpgradeController(kube::Client& client, OperatorCache& cache, UpgradeControllerOptions options);
  ~UpgradeController();
  UpgradeController(const UpgradeController&) = delete;
  UpgradeController& operator=(const UpgradeController&) = delete;

  // Adds handlers to the cache's informers that call `trigger` when something a pass reads
  // changed: a Node's labels, gpuop annotations, schedulability or readiness; a driver or
  // validator pod; a DaemonSet; the policy. Call before the cache starts. `trigger` runs on the
  // informers' threads, must be quick and thread-safe, and must stay callable while the cache
  // runs (typically: Enqueue() on the controller if there is one now).
  static void WatchCache(OperatorCache& cache, std::function<void()> trigger);

  // Starts the reconcile loop and queues a first pass.
  [[nodiscard]] absl::Status Start();
  // Stops the loop; a pass in flight finishes first. Idempotent.
  void Stop();
  // Asks for a pass (ignored once stopped).
  void Enqueue() { loop_->Enqueue(kKey); }

  // One pass, as the loop runs it (for tests and tools).
  [[nodiscard]] absl::StatusOr<kube::Result> Reconcile();

  // Node counts per state and the nodes in the upgrade, as of the last pass.
  UpgradeStatus Status() const;

 private:
  struct Metrics;

  // The planner's input from the cache, plus a List of pods for the nodes that need them.
  // What could not be read is appended to `errors`.
  UpgradeSnapshot BuildSnapshot(const PolicySpec& policy, std::vector<std::string>& errors);
  void Publish(const UpgradePlan& plan);

  kube::Client& client_;
  OperatorCache& cache_;
  const UpgradeControllerOptions options_;
  const common::Clock& clock_;
  Executor executor_;
  RevisionResolver revisions_;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<kube::Controller> loop_;

  // Reconcile() runs one at a time; this guards what passes share.
  mutable absl::Mutex mu_;
  WriteTracker writes_ ABSL_GUARDED_BY(mu_);
  // Outdated driver pods deleted and not yet gone from the cache: not deleted again.
  std::set<std::string> deleted_driver_pods_ ABSL_GUARDED_BY(mu_);
  UpgradeStatus status_ ABSL_GUARDED_BY(mu_);
  absl::Mutex reconcile_mu_;
};

}  // namespace gpuop::op::upgrade

#endif  // GPUOP_OPERATOR_UPGRADE_UPGRADE_CONTROLLER_H_
