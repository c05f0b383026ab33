#include "agent/power/power_policy.h"

#include <algorithm>

#include <yaml-cpp/yaml.h>

#include "absl/strings/str_cat.h"
#include "agent/power/policy_label.h"

namespace gpuop::agent::power {
namespace {

absl::Status FieldError(absl::string_view source, absl::string_view field,
                        absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(
      "power policy", source.empty() ? "" : absl::StrCat(" ", source), ": ", field, ": ", problem));
}

template <typename T>
absl::StatusOr<T> Scalar(const YAML::Node& node, absl::string_view source, const char* field,
                         const char* expected) {
  T value{};
  if (!node.IsScalar() || !YAML::convert<T>::decode(node, value)) {
    return FieldError(source, field,
                      absl::StrCat("must be ", expected, ", got \"",
                                   node.IsScalar() ? node.Scalar() : "(not a scalar)", "\""));
  }
  return value;
}

absl::Status Validate(const PowerPolicy& policy, absl::string_view source) {
  if (policy.idle_for <= absl::ZeroDuration()) {
    return FieldError(source, "idleMinutes", "must be positive");
  }
  if (policy.floor_watts.has_value() && policy.floor_fraction.has_value()) {
    return FieldError(source, "floorWatts", "set floorWatts or floorFraction, not both");
  }
  if (policy.floor_watts.has_value() && !(*policy.floor_watts > 0)) {
    return FieldError(source, "floorWatts", "must be positive");
  }
  if (policy.floor_fraction.has_value() &&
      !(*policy.floor_fraction > 0 && *policy.floor_fraction <= 1)) {
    return FieldError(source, "floorFraction", "must be in (0, 1]");
  }
  if (policy.utilization_threshold_percent > 100) {
    return FieldError(source, "utilizationThresholdPercent", "must be at most 100");
  }
  return absl::OkStatus();
}

absl::StatusOr<PowerPolicy> Parse(const YAML::Node& root, absl::string_view source) {
  PowerPolicy policy;
  if (!root || root.IsNull()) return policy;
  if (!root.IsMap()) return FieldError(source, "(document)", "must be a map");
  for (const auto& item : root) {
    const std::string key = item.first.as<std::string>();
    const YAML::Node& value = item.second;
    if (key == "enabled") {
      absl::StatusOr<bool> v = Scalar<bool>(value, source, "enabled", "true or false");
      if (!v.ok()) return v.status();
      policy.enabled = *v;
    } else if (key == "idleMinutes") {
      absl::StatusOr<double> v = Scalar<double>(value, source, "idleMinutes", "a number");
      if (!v.ok()) return v.status();
      policy.idle_for = absl::Seconds(*v * 60);
    } else if (key == "floorWatts") {
      absl::StatusOr<double> v = Scalar<double>(value, source, "floorWatts", "a number");
      if (!v.ok()) return v.status();
      policy.floor_watts = *v;
    } else if (key == "floorFraction") {
      absl::StatusOr<double> v = Scalar<double>(value, source, "floorFraction", "a number");
      if (!v.ok()) return v.status();
      policy.floor_fraction = *v;
    } else if (key == "utilizationThresholdPercent") {
      absl::StatusOr<unsigned int> v = Scalar<unsigned int>(
          value, source, "utilizationThresholdPercent", "an integer from 0 to 100");
      if (!v.ok()) return v.status();
      policy.utilization_threshold_percent = *v;
    } else {
      return FieldError(source, key, "unknown field");
    }
  }
  if (absl::Status valid = Validate(policy, source); !valid.ok()) return valid;
  return policy;
}

}  // namespace

absl::Status ValidatePowerPolicy(const PowerPolicy& policy) { return Validate(policy, ""); }

absl::StatusOr<PowerPolicy> ParsePowerPolicy(absl::string_view yaml, absl::string_view source) {
  try {
    return Parse(YAML::Load(std::string(yaml)), source);
  } catch (const YAML::Exception& e) {
    return FieldError(source, absl::StrCat("line ", e.mark.line + 1), e.msg);
  }
}

std::optional<double> FloorWatts(const PowerPolicy& policy, const hw::GpuSample& gpu) {
  if (!gpu.power_limit_watts.has_value() || !gpu.power_limit_min_watts.has_value() ||
      !gpu.power_limit_max_watts.has_value()) {
    return std::nullopt;
  }
  const double min = *gpu.power_limit_min_watts;
  const double max = *gpu.power_limit_max_watts;
  double floor = min;
  if (policy.floor_watts.has_value()) {
    floor = *policy.floor_watts;
  } else if (policy.floor_fraction.has_value()) {
    floor = *policy.floor_fraction * gpu.power_limit_default_watts.value_or(max);
  }
  return std::clamp(floor, min, std::max(min, max));
}

absl::StatusOr<PowerPolicy> PolicyForLabel(const PowerPolicy& base, absl::string_view label) {
  if (label.empty()) return base;
  absl::StatusOr<LabelPolicy> parsed = ParsePowerPolicyLabel(label);
  if (!parsed.ok()) return parsed.status();
  PowerPolicy policy = base;
  if (!parsed->enabled) {
    policy.enabled = false;
    return policy;
  }
  policy.enabled = true;
  policy.idle_for = parsed->idle_after;
  policy.floor_watts.reset();
  policy.floor_fraction = static_cast<double>(parsed->floor_percent) / 100.0;
  return policy;
}

}  // namespace gpuop::agent::power
