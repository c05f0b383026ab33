#ifndef GPUOP_OPERATOR_UPGRADE_PLANNER_H_
#define GPUOP_OPERATOR_UPGRADE_PLANNER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "operator/api/policy.h"
#include "operator/nodes/pod_actions.h"
#include "operator/upgrade/slots.h"
#include "operator/upgrade/snapshot.h"
#include "operator/upgrade/upgrade_state.h"

namespace gpuop::op::upgrade {

// What the executor does to a node in this pass.
enum class Action {
  kNone,
  kCordon,           // spec.unschedulable=true, in the same patch as the state change
  kUncordon,         // spec.unschedulable=false, in the same patch as the state change
  kDeletePods,       // delete `pods` (GPU pods), with `grace_seconds`
  kEvictPods,        // evict `pods` through the eviction API (PodDisruptionBudgets apply)
  kDeleteDriverPod,  // delete the outdated driver pod `pods[0]` so its DaemonSet recreates it
};
const char* ActionName(Action action);

using PodRef = op::PodRef;

// How long a node has waited in its state, and for how long it may.
struct WaitProgress {
  absl::Duration elapsed;
  absl::Duration timeout;  // zero: no timeout
};

// The plan for one node.
struct NodePlan {
  std::string node;
  std::string node_uid;
  // Out of the upgrade (NodeSnapshot::Excluded()): never written to; `detail` says why.
  bool excluded = false;
  UpgradeState from = UpgradeState::kUnknown;
  UpgradeState to = UpgradeState::kUnknown;  // == from: the node stays
  Action action = Action::kNone;
  std::vector<PodRef> pods;              // for the pod actions
  std::optional<int64_t> grace_seconds;  // kDeletePods: nullopt, each pod's own grace period
  // The gpuop.io/driver-upgrade-message to write: why the node waits or failed, what is being
  // done. Stable while nothing changes, so that waiting costs no writes.
  std::string message;
  // The annotation's current value, to write only what changed.
  std::string current_message;
  // Live detail not written to the node (it changes as other nodes move): the slot limit.
  std::string detail;
  std::optional<WaitProgress> wait;
  // The state is one with a timeout but has no since annotation: write since=now.
  bool stamp_since = false;
  // Write gpuop.io/cordoned-before: true sets it, false removes it; nullopt leaves it.
  std::optional<bool> set_cordoned_before;
  // Node labels to write with the state: the GPU clients' deploy labels, paused before the
  // driver pod is replaced and resumed once the new one is Ready (driver_clients.h); a value ""
  // removes the label.
  std::map<std::string, std::string> set_labels;
  // The node moves to its target DaemonSet: set_labels has its gpuop.io/driver.pool and
  // gpuop.io/driver.os, and gpuop.io/driver-pool-target and gpuop.io/driver-os-target are
  // removed in the same write.
  bool finish_pool_move = false;
  // The driver has left the node for good: gpuop.io/driver-removal is removed.
  bool finish_removal = false;
  // The node is safe for its waiting driver pod: gpuop.io/driver-wait-for-safe-load is removed,
  // which lets the pod load (safe_load.h).
  bool release_safe_load = false;

  bool Transition() const { return to != from; }
  // Whether the executor has anything to do for this node.
  bool HasWork() const;
  // For status and logs: "waiting for 2 jobs (selector app=train) for 3m of 10m".
  std::string Describe() const;
};

// Nodes per state, for status and metrics.
struct UpgradeCounts {
  std::map<UpgradeState, int64_t> nodes;  // managed, not excluded, by the state planned
  int64_t excluded = 0;                   // skip label, host driver or no driver
  int64_t InProgress() const;
  int64_t Get(UpgradeState state) const;
};

struct UpgradePlan {
  std::vector<NodePlan> nodes;  // one per snapshot node, sorted by name
  Slots slots;                  // computed from the states before this pass
  UpgradeCounts counts;         // by the states after this pass
  // Some node is somewhere a timeout or a timed retry applies: reconcile again soon.
  bool in_progress = false;
};

// Restarts after which a current driver pod that is not Ready fails the upgrade.
inline constexpr int32_t kMaxDriverRestarts = 10;

// Decides, for every node of `snapshot`, its next upgrade state and the action that gets it
// there. Pure and deterministic: the same snapshot, spec and time give the same plan, so an
// operator that restarts anywhere resumes with the plan it would have made. The rules:
//
//  - skip label, host driver or no driver container (NodeSnapshot::Excluded()): excluded,
//    never written to, not counted in the slots.
//  - unknown/upgrade-done: driver pod outdated (its revision is not the DaemonSet's update
//    revision, or another DaemonSet owns it, or the node is to move to another pool:
//    gpuop.io/driver-pool-target) -> upgrade-required; current -> upgrade-done.
//  - upgrade-required: current again -> upgrade-done; otherwise nodes go to cordon-required in
//    name order while slots last (none while spec.upgrade.autoUpgrade is false), recording
//    whether the node was already cordoned (gpuop.io/cordoned-before). A node that would become
//    unavailable needs one of ComputeSlots' `available`; one already cordoned or NotReady needs
//    only room under maxParallel, as starting it makes nothing less available.
//  - cordon-required: cordon -> wait-for-jobs-required.
//  - wait-for-jobs-required: until no unfinished pod matches waitForJobs.podSelector, or its
//    timeout passes (the upgrade then goes ahead) -> pod-deletion-required.
//  - pod-deletion-required: delete unfinished GPU pods (not gpuop's, DaemonSet or mirror pods)
//    with their own grace period; emptyDir pods are refused unless deleteEmptyDir, pods without
//    a controller unless force (as kubectl drain's --delete-emptydir-data and --force). Refused
//    or timed out: -> drain-required when drain is enabled, else upgrade-failed. None left ->
//    drain-required / pod-restart-required.
//  - drain-required: evict unfinished pods that are not DaemonSet, gpuop or mirror pods, match
//    drain.podSelector and lack the drain-skip label (such pods keep running through the
//    upgrade). emptyDir pods without drain.deleteEmptyDir, and pods without a controller without
//    drain.force, fail the node at once (kubectl drain refuses them too). A blocked eviction is
//    retried every pass until drain.timeout -> upgrade-failed. None left -> pod-restart-required.
//  - pod-restart-required: pause gpuop's GPU clients on the node (their deploy labels to
//    paused-for-driver-upgrade), wait until none of their pods is left, then delete the outdated
//    driver pod (for a pool move: switch gpuop.io/driver.pool to the target, so the old
//    DaemonSet lets go of the node and the new one takes it); once the DaemonSet's new pod is
//    current and Ready, resume the clients ->
//    validation-required. More than kMaxDriverRestarts restarts or podRestartTimeout ->
//    upgrade-failed.
//  - validation-required: a validator pod created after the new driver pod is Ready (or
//    validation disabled) -> uncordon-required; validationTimeout -> upgrade-failed.
//  - uncordon-required: uncordon unless gpuop.io/cordoned-before -> upgrade-done.
//  - upgrade-failed: holds no slot; once the driver pod is current, Ready and validated ->
//    upgrade-done, uncordoned unless it was cordoned before. A failure before the driver pod was
//    touched (cordon to drain) uncordons the node at once, as it still runs its working driver.
//    An upgrade is retried by setting the state label to upgrade-required.
//  - clients paused for a driver restart on a node no longer restarting its driver (failed,
//    done, or a state label set by hand) are resumed, unless remediation is restarting that
//    node's driver: its pause is its own.
//  - remediation and upgrades never restart the same driver: a node that remediation holds
//    (in-progress) does not start an upgrade, and remediation's NoSchedule taint makes a node
//    count as unavailable.
// Every wait is timed from gpuop.io/driver-upgrade-since, so time already waited survives a
// restart; a zero timeout waits forever. An unknown label value counts as unknown.
UpgradePlan Plan(const UpgradeSnapshot& snapshot, const UpgradeSpec& spec, absl::Time now);

}  // namespace gpuop::op::upgrade

#endif  // GPUOP_OPERATOR_UPGRADE_PLANNER_H_
