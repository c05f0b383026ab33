#ifndef GPUOP_OPERATOR_APP_OPERATOR_H_
#define GPUOP_OPERATOR_APP_OPERATOR_H_

#include <atomic>
#include <memory>
#include <stop_token>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "kube/client/client.h"
#include "kube/controller/controller.h"
#include "kube/controller/metrics.h"
#include "kube/events/event_recorder.h"
#include "metrics/registry.h"
#include "operator/cache/cache.h"

namespace gpuop::op {

struct OperatorOptions {
  std::string ns = "gpuop-system";  // the operator's namespace: operands, Lease
  // Who this replica is in the Lease and in Events (the pod name).
  std::string identity;
  bool leader_elect = true;
  absl::Duration lease_duration = absl::Seconds(15);
  absl::Duration renew_deadline = absl::Seconds(10);
  absl::Duration retry_period = absl::Seconds(2);
  int node_workers = 4;
  absl::Duration policy_resync = absl::Minutes(10);
  // Installs or updates the CRDs at start (the chart's crds/ are not upgraded by Helm).
  bool install_crds = true;
  absl::Duration cache_sync_timeout = absl::Minutes(2);
  // Register the upgrade metrics (once per registry: off for a second Operator on one registry).
  bool upgrade_metrics = true;
};

// The operator process: installs the CRDs, fills the cache (on every replica, so a standby takes
// over warm), and while it holds the Lease runs the controllers:
//   nodes   (key: Node name)  labels, GPUNode objects and status      NodeReconciler
//   policy  (key: "default")  operands, policy and pool status          PolicyReconciler
//   upgrade (key: "upgrade")  rolling driver upgrades                   upgrade::UpgradeController
//   remediation               unhealthy nodes back to service           RemediationController
// Informer events become keys: a Node or operand pod change enqueues that node and the policy;
// a policy or pool change enqueues the policy and every node; a GPUNode change its node.
//
// Thread-safe: Ready()/Healthy()/IsLeader() from any thread while Run() runs on one.
class Operator {
 public:
  Operator(kube::Client& client, metrics::Registry& registry, OperatorOptions options);
  ~Operator();
  Operator(const Operator&) = delete;
  Operator& operator=(const Operator&) = delete;

  // Blocks until `stop` is requested (then stops the controllers, releases the Lease and stops
  // the cache) or a start-up step fails (CRDs, cache sync, leader election config).
  [[nodiscard]] absl::Status Run(std::stop_token stop);

  // /readyz: the cache has synced. /healthz: Run has not failed.
  bool Ready() const { return ready_.load(); }
  bool Healthy() const { return healthy_.load(); }
  bool IsLeader() const { return leading_.load(); }

 private:
  struct Controllers;
  void Lead(std::stop_token stop);
  void RegisterHandlers();
  void EnqueueNode(const std::string& name);
  void EnqueuePolicy();
  void EnqueuePolicySoon();
  void EnqueueAllNodes();

  kube::Client& client_;
  metrics::Registry& registry_;
  const OperatorOptions options_;
  kube::ControllerMetrics controller_metrics_;
  std::unique_ptr<kube::EventRecorder> recorder_;
  std::unique_ptr<OperatorCache> cache_;

  absl::Mutex mu_;
  Controllers* controllers_ ABSL_GUARDED_BY(mu_) = nullptr;  // while leading
  std::atomic<bool> ready_{false};
  std::atomic<bool> healthy_{true};
  std::atomic<bool> leading_{false};
};

}  // namespace gpuop::op

#endif  // GPUOP_OPERATOR_APP_OPERATOR_H_
