#include "operator/upgrade/upgrade_state.h"

namespace gpuop::op::upgrade {
namespace {

struct StateNames {
  UpgradeState state;
  absl::string_view label;
  absl::string_view reason;
};

constexpr StateNames kNames[] = {
    {UpgradeState::kUnknown, "", "UpgradeStateUnknown"},
    {UpgradeState::kUpgradeRequired, "upgrade-required", "UpgradeRequired"},
    {UpgradeState::kCordonRequired, "cordon-required", "CordonRequired"},
    {UpgradeState::kWaitForJobsRequired, "wait-for-jobs-required", "WaitForJobsRequired"},
    {UpgradeState::kPodDeletionRequired, "pod-deletion-required", "PodDeletionRequired"},
    {UpgradeState::kDrainRequired, "drain-required", "DrainRequired"},
    {UpgradeState::kPodRestartRequired, "pod-restart-required", "PodRestartRequired"},
    {UpgradeState::kValidationRequired, "validation-required", "ValidationRequired"},
    {UpgradeState::kUncordonRequired, "uncordon-required", "UncordonRequired"},
    {UpgradeState::kUpgradeDone, "upgrade-done", "UpgradeDone"},
    {UpgradeState::kUpgradeFailed, "upgrade-failed", "UpgradeFailed"},
};

const StateNames& NamesOf(UpgradeState state) {
  for (const StateNames& names : kNames) {
    if (names.state == state) return names;
  }
  return kNames[0];
}

}  // namespace

absl::string_view UpgradeStateLabelValue(UpgradeState state) { return NamesOf(state).label; }

std::optional<UpgradeState> ParseUpgradeState(absl::string_view label_value) {
  for (const StateNames& names : kNames) {
    if (names.label == label_value) return names.state;
  }
  return std::nullopt;
}

bool InProgress(UpgradeState state) {
  switch (state) {
    case UpgradeState::kUnknown:
    case UpgradeState::kUpgradeRequired:
    case UpgradeState::kUpgradeDone:
    case UpgradeState::kUpgradeFailed:
      return false;
    case UpgradeState::kCordonRequired:
    case UpgradeState::kWaitForJobsRequired:
    case UpgradeState::kPodDeletionRequired:
    case UpgradeState::kDrainRequired:
    case UpgradeState::kPodRestartRequired:
    case UpgradeState::kValidationRequired:
    case UpgradeState::kUncordonRequired:
      return true;
  }
  return false;
}

absl::string_view UpgradeStateReason(UpgradeState state) { return NamesOf(state).reason; }

std::ostream& operator<<(std::ostream& os, UpgradeState state) {
  return os << (state == UpgradeState::kUnknown ? "unknown" : UpgradeStateLabelValue(state));
}

}  // namespace gpuop::op::upgrade
