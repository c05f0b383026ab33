#ifndef GPUOP_OPERATOR_UPGRADE_UPGRADE_STATE_H_
#define GPUOP_OPERATOR_UPGRADE_UPGRADE_STATE_H_

#include <optional>
#include <ostream>

#include "absl/strings/string_view.h"

namespace gpuop::op::upgrade {

// Where a node is in a driver upgrade. The value lives in the node's kUpgradeStateLabel
// (operator/api/node_state.h), so a restarted operator resumes where the last one stopped.
//
//   unknown / upgrade-done --driver pod outdated--> upgrade-required
//   upgrade-required --slot free--> cordon-required --cordoned--> wait-for-jobs-required
//   --jobs finished or timed out--> pod-deletion-required --GPU pods gone--> [drain-required
//   --node drained-->] pod-restart-required --new driver pod Ready--> validation-required
//   --validator Ready--> uncordon-required --uncordoned unless it was before--> upgrade-done
//   any step --timeout or error--> upgrade-failed --driver current, Ready, validated-->
//   uncordon-required / upgrade-done
enum class UpgradeState {
  kUnknown,  // no label: the operator has not looked at the node yet
  kUpgradeRequired,
  kCordonRequired,
  kWaitForJobsRequired,
  kPodDeletionRequired,
  kDrainRequired,
  kPodRestartRequired,
  kValidationRequired,
  kUncordonRequired,
  kUpgradeDone,
  kUpgradeFailed,
};

inline constexpr UpgradeState kAllUpgradeStates[] = {UpgradeState::kUnknown,
                                                     UpgradeState::kUpgradeRequired,
                                                     UpgradeState::kCordonRequired,
                                                     UpgradeState::kWaitForJobsRequired,
                                                     UpgradeState::kPodDeletionRequired,
                                                     UpgradeState::kDrainRequired,
                                                     UpgradeState::kPodRestartRequired,
                                                     UpgradeState::kValidationRequired,
                                                     UpgradeState::kUncordonRequired,
                                                     UpgradeState::kUpgradeDone,
                                                     UpgradeState::kUpgradeFailed};

// The label value: "upgrade-required", ..., "upgrade-failed"; "" for kUnknown.
absl::string_view UpgradeStateLabelValue(UpgradeState state);

// The state a label value names: kUnknown for "" (no label); nullopt for a value that is not a
// state (someone wrote the label by hand).
std::optional<UpgradeState> ParseUpgradeState(absl::string_view label_value);

// Whether a node in `state` is taking part in an upgrade right now: it holds one of the slots
// that maxParallel limits. Unknown, upgrade-required, upgrade-done and upgrade-failed do not.
bool InProgress(UpgradeState state);

// The Event reason for entering `state`, in UpperCamelCase ("CordonRequired", "UpgradeDone").
absl::string_view UpgradeStateReason(UpgradeState state);

// Prints the label value ("unknown" for kUnknown), for logs and test failures.
std::ostream& operator<<(std::ostream& os, UpgradeState state);

}  // namespace gpuop::op::upgrade

#endif  // GPUOP_OPERATOR_UPGRADE_UPGRADE_STATE_H_
