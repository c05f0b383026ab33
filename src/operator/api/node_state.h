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
// The node was cordoned before gpuop touched it: it stays cordoned afterwards.
inline constexpr char kWasCordonedAnnotation[] = "gpuop.io/cordoned-before";

// Remediation.
inline constexpr char kRemediationStateLabel[] = "gpuop.io/remediation-state";
inline constexpr char kRemediationStepAnnotation[] = "gpuop.io/remediation-step";
inline constexpr char kRemediationSinceAnnotation[] = "gpuop.io/remediation-since";
inline constexpr char kRemediationMessageAnnotation[] = "gpuop.io/remediation-message";
// Start times of the remediations inside the window, comma-separated RFC 3339.
inline constexpr char kRemediationAttemptsAnnotation[] = "gpuop.io/remediation-attempts";
// The taint remediation puts on a node it works on.
inline constexpr char kRemediationTaintKey[] = "gpuop.io/remediation";

}  // namespace gpuop::op

#endif  // GPUOP_OPERATOR_API_NODE_STATE_H_
