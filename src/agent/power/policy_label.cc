#include "agent/power/policy_label.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gpuop::agent::power {

std::string FormatPowerPolicyLabel(const LabelPolicy& policy) {
  if (!policy.enabled) return "off";
  return absl::StrCat("idle-", absl::ToInt64Seconds(policy.idle_after), "s.floor-",
                      policy.floor_percent, "pct");
}

absl::StatusOr<LabelPolicy> ParsePowerPolicyLabel(absl::string_view value) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("label ", kPowerPolicyLabel, "=\"", value,
                                                   "\": ", why,
                                                   " (expected \"off\" or "
                                                   "\"idle-<seconds>s.floor-<percent>pct\")"));
  };
  if (value == "off") return LabelPolicy{.enabled = false};
  const std::vector<absl::string_view> parts = absl::StrSplit(value, ".floor-");
  if (parts.size() != 2) return bad("not a power policy");
  absl::string_view idle = parts[0];
  absl::string_view floor = parts[1];
  int64_t seconds = 0;
  int64_t percent = 0;
  if (!absl::ConsumePrefix(&idle, "idle-")) return bad("not a power policy");
  if (!absl::ConsumeSuffix(&idle, "s") || !absl::SimpleAtoi(idle, &seconds) || seconds <= 0) {
    return bad("the idle time is not a positive number of seconds");
  }
  if (!absl::ConsumeSuffix(&floor, "pct") || !absl::SimpleAtoi(floor, &percent) || percent < 1 ||
      percent > 100) {
    return bad("the floor is not a percentage from 1 to 100");
  }
  return LabelPolicy{
      .enabled = true, .idle_after = absl::Seconds(seconds), .floor_percent = percent};
}

}  // namespace gpuop::agent::power
