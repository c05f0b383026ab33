#ifndef GPUOP_AGENT_POWER_POLICY_LABEL_H_
#define GPUOP_AGENT_POWER_POLICY_LABEL_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace gpuop::agent::power {

// The node label through which a GPUNodePool's power settings reach the power manager on its
// nodes: the operator writes it, the agent follows it (its flags are the policy's settings, used
// while the label is absent). Label values allow only [A-Za-z0-9._-], so the settings are
// "off" (no capping on this node) or "idle-<seconds>s.floor-<percent>pct"
// ("idle-900s.floor-50pct").
inline constexpr char kPowerPolicyLabel[] = "gpuop.io/power.policy";

struct LabelPolicy {
  bool enabled = true;
  absl::Duration idle_after;  // > 0 when enabled
  int64_t floor_percent = 0;  // 1..100 when enabled
  friend bool operator==(const LabelPolicy&, const LabelPolicy&) = default;
};

std::string FormatPowerPolicyLabel(const LabelPolicy& policy);

// InvalidArgument naming the label and what is wrong with `value`.
[[nodiscard]] absl::StatusOr<LabelPolicy> ParsePowerPolicyLabel(absl::string_view value);

}  // namespace gpuop::agent::power

#endif  // GPUOP_AGENT_POWER_POLICY_LABEL_H_
