#ifndef GPUOP_OPERATOR_UPGRADE_SNAPSHOT_H_
#define GPUOP_OPERATOR_UPGRADE_SNAPSHOT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kube/types/labels.h"
#include "kube/types/node.h"
#include "operator/nodes/driver_clients.h"

namespace gpuop::op::upgrade {

// What the upgrade planner knows about the cluster: plain values, read from the cache and the
// API server by the controller, so that planning is a pure function a test can call with a
// hand-written snapshot.

// A pod on a node, as the wait-for-jobs, pod-deletion and drain steps need it.
struct PodInfo {
  std::string ns;
  std::string name;
  std::string uid;
  kube::Labels labels;
  std::string phase;         // Pending, Running, Succeeded, Failed, Unknown
  bool terminating = false;  // has a deletionTimestamp
  bool mirror = false;       // a static pod's mirror (kubernetes.io/config.mirror)
  bool daemon_set = false;   // its controller is a DaemonSet
  bool controlled = false;   // it has a controller at all
  // One of gpuop's own: rendered by the operator (app.kubernetes.io/managed-by=gpuop-operator)
  // or the chart's operator and uninstall Job (app.kubernetes.io/part-of=gpuop). A drain never
  // evicts them: the operator's PodDisruptionBudget would block it, and a drained operator could
  // not finish the drain.
  bool operand = false;
  bool uses_gpu = false;   // a container limits nvidia.com/* or amd.com/gpu
  bool empty_dir = false;  // mounts an emptyDir volume (its data goes with the pod)

  // Succeeded or Failed: nothing left to wait for, delete or evict.
  bool Finished() const { return phase == "Succeeded" || phase == "Failed"; }
  std::string Key() const { return ns + "/" + name; }
};

// A pod object as PodInfo. InvalidArgument when the object is malformed.
[[nodiscard]] absl::StatusOr<PodInfo> PodInfoFromJson(const nlohmann::json& object);

// The node's driver pod (a pod of one of gpuop's driver DaemonSets).
struct DriverPod {
  std::string ns;
  std::string name;
  std::string owner;     // the DaemonSet
  std::string revision;  // its controller-revision-hash label
  bool ready = false;
  int32_t restarts = 0;
  absl::Time created = absl::InfinitePast();
  // It waits to load until the node is safe (gpuop.io/driver-wait-for-safe-load names it).
  bool waits_for_safe_load = false;
};

struct NodeSnapshot {
  std::string name;
  std::string uid;
  std::string state_label;  // gpuop.io/driver-upgrade-state; "" when absent
  bool unschedulable = false;
  bool ready = false;            // the Node's Ready condition is True
  bool cordoned_before = false;  // gpuop.io/cordoned-before=true
  bool skip = false;             // gpuop.io/driver-upgrade.skip=true: never touched
  bool host_driver = false;      // the host has its own driver: never upgraded
  bool no_driver = false;  // gpuop.io/deploy.driver=not-applicable (AMD only): nothing to upgrade
  std::optional<absl::Time> since;  // gpuop.io/driver-upgrade-since, when present and valid
  std::string message;              // gpuop.io/driver-upgrade-message
  std::string driver_daemon_set;    // the driver DaemonSet of the node's pool
  // The pool the node is to move to (gpuop.io/driver-pool-target): its driver DaemonSet's name,
  // "" when no move is pending.
  std::string target_daemon_set;
  std::string target_pool;  // that pool's gpuop.io/driver.pool value; "" when it stays
  // The gpuop.io/driver.os value to move to ("-": none); "" when it stays.
  std::string target_os;
  // Why the node's driver is to leave it (gpuop.io/driver-removal); "" when it stays.
  std::string removal;
  // gpuop.io/deploy.driver is "true": the driver DaemonSet selects the node.
  bool driver_deployed = true;
  // The validator runs on the node (its deploy label is true or paused): validation waits for
  // it there.
  bool validator_deployed = true;
  // The value of gpuop.io/driver-wait-for-safe-load; "" when absent.
  std::string safe_load_pod;
  // That DaemonSet's update revision (the controller-revision-hash its new pods get); nullopt
  // while unknown (no DaemonSet, or its controller has not caught up with its latest spec).
  std::optional<std::string> update_revision;
  std::optional<DriverPod> driver_pod;
  // Whether a validator pod on the node that started after the driver pod was created is Ready
  // (a result from before the driver restart says nothing about the new driver); nullopt when
  // there is none.
  std::optional<bool> validator_ready;
  // gpuop's GPU clients on the node (paused around the driver pod's replacement).
  DriverClients clients;
  // Remediation holds the node (gpuop.io/remediation-state=in-progress): no upgrade starts.
  bool remediating = false;
  // Remediation is replacing the driver pod right now (its RestartDriver step): the clients'
  // pause is its own.
  bool remediation_restarting_driver = false;
  // The node carries remediation's NoSchedule taint: it counts as unavailable.
  bool remediation_tainted = false;
  // Every pod on the node, listed for the states that look at them (wait-for-jobs,
  // pod-deletion, drain); `pods_listed` false otherwise or when listing failed (`pods_error`).
  bool pods_listed = false;
  std::string pods_error;
  std::vector<PodInfo> pods;

  // Out of the upgrade altogether: skipped, or a host driver or no driver container, unless
  // gpuop's driver is leaving the node (which a host driver found meanwhile does not stop).
  bool Excluded() const;
};

struct UpgradeSnapshot {
  // Every managed GPU node, in any order (the planner sorts by name).
  std::vector<NodeSnapshot> nodes;
  // The validator runs on GPU nodes (spec.components.validator): validation-required waits for
  // it. When false, that step passes at once.
  bool validation_enabled = true;
};

// Node-level facts from a cached Node: name, uid, the upgrade labels and annotations,
// schedulability, readiness, the skip, host-driver and not-applicable labels and the pool's
// driver DaemonSet name. The pod-level fields are left for the caller.
NodeSnapshot DescribeNode(const kube::Node& node);

// Whether the upgrade controller manages `node`: a GPU node the operator labelled
// gpuop.io/managed=true, or one whose driver is leaving it (gpuop.io/driver-removal) or that is
// in the middle of an upgrade.
bool IsManagedNode(const kube::Node& node);

// The driver DaemonSet a node's gpuop.io/driver.pool and gpuop.io/driver.os labels select it
// for (render.h DriverDaemonSetOfLabels).
std::string DriverDaemonSetOf(const kube::Node& node);

}  // namespace gpuop::op::upgrade

#endif  // GPUOP_OPERATOR_UPGRADE_SNAPSHOT_H_
