#ifndef GPUOP_AGENT_POWER_POWER_POLICY_H_
#define GPUOP_AGENT_POWER_POWER_POLICY_H_

#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "hw/model.h"

namespace gpuop::agent::power {

// When an idle, unallocated GPU has its power limit lowered, and to what.
//
// In YAML (the cluster policy's `power` section):
//
//   enabled: true
//   idleMinutes: 15                  # idle and unallocated this long before lowering
//   floorWatts: 150                  # or floorFraction: 0.4 (of the default limit)
//   utilizationThresholdPercent: 5   # at or below counts as idle
struct PowerPolicy {
  bool enabled = false;
  absl::Duration idle_for = absl::Minutes(10);
  // The lowered limit: floor_watts, or floor_fraction of the GPU's default limit, or (neither
  // set) the GPU's minimum. Always clamped into the GPU's [min, max] limit constraints.
  std::optional<double> floor_watts;
  std::optional<double> floor_fraction;
  unsigned int utilization_threshold_percent = 5;
};

// InvalidArgument naming the field: idle time not positive, a negative floor, a fraction outside
// (0, 1], both floors set, a threshold above 100.
[[nodiscard]] absl::Status ValidatePowerPolicy(const PowerPolicy& policy);

// The policy on a node whose gpuop.io/power.policy label (policy_label.h) says `label`: `base`
// (the component's flags) when the label is absent (""), no capping for "off", else `base` with
// the label's idle time and floor (a floor in percent replaces a floor in watts).
// InvalidArgument naming the label for a value that does not parse; the caller keeps the
// policy it has.
[[nodiscard]] absl::StatusOr<PowerPolicy> PolicyForLabel(const PowerPolicy& base,
                                                         absl::string_view label);

// Parses the YAML form above and validates it. Errors name `source` and the field. An empty
// document is the default policy (disabled).
[[nodiscard]] absl::StatusOr<PowerPolicy> ParsePowerPolicy(absl::string_view yaml,
                                                           absl::string_view source);

// The limit `policy` lowers `gpu` to, within its constraints; nullopt when the GPU reports no
// current limit or no constraints (power management not supported).
std::optional<double> FloorWatts(const PowerPolicy& policy, const hw::GpuSample& gpu);

}  // namespace gpuop::agent::power

#endif  // GPUOP_AGENT_POWER_POWER_POLICY_H_
