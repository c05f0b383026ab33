#ifndef GPUOP_OPERATOR_API_NODE_STATE_H_
#define GPUOP_OPERATOR_API_NODE_STATE_H_

// Where the operator keeps per-node state in the cluster, so that a restarted operator resumes
// exactly where it stopped: labels for what selectors need, annotations for the rest.
namespace gpuop::op {

// Driver upgrades (the states are in upgrade/upgrade_state.h).
inline constexpr char kUpgradeStateLabel[] = "gpuop.io/driver-upgrade-state";
inline constexpr char kUpgradeSkipLabel[] = "gpuop.io/driver-upgrade.skip";  // "true": never
inline constexpr char kUpgradeDrainSkipLabel[] = "gpuop.io/driver-upgrade-drain.skip";  // pods
inline constexpr char kUpgradeSinceAnnotation[] = "gpuop.io/driver-upgrade-since";
inline constexpr char kUpgradeMessageAnnotation[] = "gpuop.io/driver-upgrade-message";
// The driver pool (gpuop.io/driver.pool value) a node with a running driver pod is to move to:
// node labelling writes it instead of switching the label, and the upgrade switches the label in
// its pod-restart-required step, once the node is drained and gpuop's GPU clients are stopped.
inline constexpr char kDriverPoolTargetAnnotation[] = "gpuop.io/driver-pool-target";
// The same for gpuop.io/driver.os (the driver image's OS and kernel): the value it is to move to,
// kNoDriverOs when the label is to go (a policy that switched to a fixed driver.osTag).
inline constexpr char kDriverOsTargetAnnotation[] = "gpuop.io/driver-os-target";
inline constexpr char kNoDriverOs[] = "-";
// Why the node's running driver is to leave it ("driver-disabled": spec.components.driver is
// off; "operands-disabled": gpuop.io/deploy.operands=false; "node-deselected": the node left the
// policy's nodeSelector or is no GPU node any more). Node labelling writes it instead of taking
// gpuop.io/deploy.driver away, which would make the DaemonSet controller kill the driver under the
// node's workloads; the upgrade takes the node through cordon and drain, stops gpuop's GPU
// clients, switches gpuop.io/deploy.driver to "false" in pod-restart-required and removes this
// annotation once the node is back in service.
inline constexpr char kDriverRemovalAnnotation[] = "gpuop.io/driver-removal";
inline constexpr char kRemovalDriverDisabled[] = "driver-disabled";
inline constexpr char kRemovalOperandsDisabled[] = "operands-disabled";
inline constexpr char kRemovalNodeDeselected[] = "node-deselected";
// A driver pod waits to load until the node is safe (agent/driver/safe_load.h): its name, set by
// the pod's first step when a driver is already loaded on the node; the upgrade takes the node
// through cordon and drain and removes it in pod-restart-required, which lets the pod load.
inline constexpr char kDriverSafeLoadAnnotation[] = "gpuop.io/driver-wait-for-safe-load";
// The node was cordoned before gpuop touched it: it stays cordoned afterwards.
inline constexpr char kWasCordonedAnnotation[] = "gpuop.io/cordoned-before";

// Remediation.
inline constexpr char kRemediationStateLabel[] = "gpuop.io/remediation-state";
inline constexpr char kRemediationStepAnnotation[] = "gpuop.io/remediation-step";
inline constexpr char kRemediationSinceAnnotation[] = "gpuop.io/remediation-since";
inline constexpr char kRemediationMessageAnnotation[] = "gpuop.io/remediation-message";
// The recovery action the remediation in progress runs (ResetGpu, RebootNode, ContactSupport).
inline constexpr char kRemediationActionAnnotation[] = "gpuop.io/remediation-action";
// Start times of the remediations inside the window, comma-separated RFC 3339.
inline constexpr char kRemediationAttemptsAnnotation[] = "gpuop.io/remediation-attempts";
// The taint remediation puts on a node it works on.
inline constexpr char kRemediationTaintKey[] = "gpuop.io/remediation";

}  // namespace gpuop::op

#endif  // GPUOP_OPERATOR_API_NODE_STATE_H_
