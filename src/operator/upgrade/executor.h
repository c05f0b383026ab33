#ifndef GPUOP_OPERATOR_UPGRADE_EXECUTOR_H_
#define GPUOP_OPERATOR_UPGRADE_EXECUTOR_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kube/client/client.h"
#include "kube/events/event_recorder.h"
#include "operator/upgrade/planner.h"

namespace gpuop::op::upgrade {

// What carrying out one node's plan did.
struct ExecuteResult {
  // The Node was patched; its resourceVersion afterwards (for waiting until the cache has it).
  bool patched = false;
  std::string resource_version;
  // Pod actions that did not happen this pass (a PodDisruptionBudget blocked an eviction, a
  // call failed), as written into the message annotation. They are retried on the next pass.
  std::vector<std::string> problems;
};

// Carries out NodePlans against the API server. All upgrade state lives on the Node: the state
// label, the since, message and cordoned-before annotations and spec.unschedulable change
// together in ONE merge patch (field manager "gpuop-operator"), so an operator killed at any
// point finds either the old state or the new one, never half of each. A transition also records
// an Event on the Node (reason: UpgradeStateReason of the new state; Warning for upgrade-failed).
//
// Pod actions run before the patch, and what went wrong with them ("eviction of pod ns/p is
// blocked by a PodDisruptionBudget: ...") is appended to the message, so the node tells why it
// waits. Deleting a pod that is already gone counts as done.
//
// Thread-safe (it keeps no state); the client and the recorder must outlive it.
class Executor {
 public:
  // `events` may be null (no Events).
  Executor(kube::Client& client, kube::EventRecorder* events) : client_(client), events_(events) {}

  // Carries out `plan` at `now` (the since written on a transition). Errors are the Node patch's;
  // pod action failures are reported in the result and the message instead.
  [[nodiscard]] absl::StatusOr<ExecuteResult> Execute(const NodePlan& plan, absl::Time now);

  // The merge patch that writes `plan` with `message`, or null when nothing would change.
  static kube::Json NodePatch(const NodePlan& plan, const std::string& message, absl::Time now);

 private:
  // Runs the plan's pod action; what did not work, in words.
  std::vector<std::string> RunPodAction(const NodePlan& plan);

  kube::Client& client_;
  kube::EventRecorder* events_;
};

}  // namespace gpuop::op::upgrade

#endif  // GPUOP_OPERATOR_UPGRADE_EXECUTOR_H_
