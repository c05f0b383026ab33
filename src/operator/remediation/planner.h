#ifndef GPUOP_OPERATOR_REMEDIATION_PLANNER_H_
#define GPUOP_OPERATOR_REMEDIATION_PLANNER_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "operator/api/policy.h"
#include "operator/nodes/driver_clients.h"
#include "operator/nodes/pod_actions.h"
#include "operator/upgrade/snapshot.h"

namespace gpuop::op::remediation {

// Where a node is in remediation: the value of gpuop.io/remediation-state ("" when absent).
//   (none) --GPUHealthy False--> pending --slot--> in-progress (steps in order) --> done
//   in-progress --a step timed out or failed--> failed (the node stays tainted for a person)
//   pending --maxAttempts in the window reached--> exhausted (stays tainted until the window
//   passes, then pending again)
//   done / failed / exhausted --GPUHealthy True and no taint needed--> (label removed)
inline constexpr char kPending[] = "pending";
inline constexpr char kInProgress[] = "in-progress";
inline constexpr char kDone[] = "done";
inline constexpr char kFailed[] = "failed";
inline constexpr char kExhausted[] = "exhausted";

// What the planner knows about one managed GPU node.
struct NodeState {
  std::string name;
  std::string state;                 // the label
  std::string step;                  // gpuop.io/remediation-step: the step in progress ("Drain")
  std::optional<absl::Time> since;   // when the step (or the wait) began
  std::vector<absl::Time> attempts;  // starts of earlier remediations
  std::string message;               // current gpuop.io/remediation-message
  // GPUHealthy: nullopt when the agent has not reported.
  std::optional<bool> healthy;
  std::string health_message;
  // What the agent says the GPUs need (the GPURecoveryAction condition's reason while True):
  // "ResetGpu", "RebootNode", "ContactSupport"; "" when none (or an agent that does not say).
  std::string required_action;
  // The action the remediation in progress was started for (gpuop.io/remediation-action).
  std::string remediation_action;
  bool ready = false;             // the Node's Ready condition
  bool tainted = false;           // carries kRemediationTaintKey
  bool reboot_requested = false;  // carries the policy's reboot annotation
  // A driver upgrade holds the node (cordon-required to uncordon-required; not a node that
  // only waits for an upgrade slot).
  bool upgrading = false;
  // The upgrade is replacing the driver pod right now (pod-restart-required): the clients'
  // pause is its own.
  bool upgrade_restarting_driver = false;
  // gpuop's GPU clients on the node (paused around the driver pod's replacement).
  DriverClients clients;
  // The driver pod on the node (none with a host driver).
  struct DriverPod {
    std::string ns, name;
    bool ready = false;
    absl::Time created;
    // It waits to load until the node is safe (gpuop.io/driver-wait-for-safe-load names it).
    bool waits_for_safe_load = false;
  };
  std::optional<DriverPod> driver_pod;
  std::optional<bool> validator_ready;  // nullopt: no validator pod
  bool pods_listed = false;             // `pods` valid (listed for the Drain step)
  std::vector<upgrade::PodInfo> pods;
};

// What happens to pods in this pass (before the Node is written).
enum class PodAction {
  kNone,
  kEvict,            // evict `pods` (PodDisruptionBudgets apply)
  kDeleteDriverPod,  // delete `pods[0]` so its DaemonSet recreates it
};

// The plan for one node in this pass.
struct NodePlan {
  std::string node;
  std::string state;  // to write (may equal the current one)
  std::string step;
  std::string message;
  std::string action;                        // gpuop.io/remediation-action to write ("": none)
  bool restamp = false;                      // write since = now (a new step or wait began)
  std::optional<absl::Time> record_attempt;  // append to the attempts annotation
  std::vector<absl::Time> attempts;          // the attempts to keep (inside the window)
  // Written with the state, in one Node write.
  bool taint = false;
  bool untaint = false;
  bool request_reboot = false;  // set the policy's reboot annotation
  // Remove gpuop.io/driver-wait-for-safe-load: the new driver pod may load (the node is drained
  // and the clients are paused).
  bool release_safe_load = false;
  PodAction pod_action = PodAction::kNone;
  std::vector<PodRef> pods;
  // Node labels to write with the state: the GPU clients' deploy labels (driver_clients.h).
  std::map<std::string, std::string> set_labels;
  // Anything to write or do.
  bool changed = false;
};

struct Plan {
  std::vector<NodePlan> nodes;  // only nodes with something to do, sorted by name
  int64_t in_progress = 0;      // after this pass
  bool active = false;          // some node waits on a timer: reconcile again soon
};

// Decides what remediation does on every node. Pure: same inputs, same plan, so a restarted
// operator resumes where the last one stopped (all state is in the node's labels and
// annotations). Rules:
//  - an unhealthy node (GPUHealthy False) not being remediated becomes pending; a pending node
//    starts (in-progress, first step, attempt recorded) while fewer than maxParallel are in
//    progress, in name order, unless maxAttempts started within the window: then exhausted
//    (tainted, message says when it may try again). A node in a driver upgrade waits.
//  - steps run in the policy's order, with the repair the node's required action asks for in
//    place of the policy's repair steps (RestartDriver, RequestReboot; StepsFor):
//      ResetGpu        RestartDriver (a reload resets every GPU), or RequestReboot where the
//                      node has no driver pod
//      RebootNode      RequestReboot
//      ContactSupport  no repair: the steps before it run, then the node is failed (tainted,
//                      for a person)
//      none reported   the policy's steps as written
//    The action is fixed when the remediation starts (a GPU that turns healthy mid-way does not
//    change the steps); one that grows (a reset becomes a reboot) starts the steps over.
//    A policy without a repair step runs none. Each step has stepTimeout from its start (since):
//      Taint          add the NoSchedule taint gpuop.io/remediation
//      Drain          evict every unfinished pod that is not a DaemonSet's, a mirror or
//                     gpuop's own (PodDisruptionBudgets apply; a blocked eviction is retried)
//      RestartDriver  pause gpuop's GPU clients on the node and wait until their pods are
//                     gone, delete the driver pod, wait for its replacement to be Ready and
//                     resume the clients (skipped with a host driver)
//      RequestReboot  set the reboot annotation; wait until the reboot tool removes it and the
//                     node is Ready
//      Validate       wait for GPUHealthy True (and, where it runs, a validator pod created
//                     after the driver pod Ready)
//      Untaint        remove the taint -> done
//    a timeout -> failed (tainted; Warning); a node that becomes healthy and validated while
//    failed or exhausted is untainted and returns to service.
//  - disabled remediation starts nothing, and nodes it holds are untainted and released.
//  - clients paused for a driver restart on a node not in the RestartDriver step are resumed,
//    unless a driver upgrade is replacing that node's driver pod: its pause is its own.
// The steps remediation runs on `node` (see above).
std::vector<RemediationStep> StepsFor(const RemediationSpec& spec, const NodeState& node,
                                      const std::string& action);

Plan PlanRemediation(const std::vector<NodeState>& nodes, const RemediationSpec& spec,
                     bool validation_enabled, absl::Time now);

}  // namespace gpuop::op::remediation

#endif  // GPUOP_OPERATOR_REMEDIATION_PLANNER_H_
