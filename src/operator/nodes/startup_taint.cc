#include "operator/nodes/startup_taint.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "operator/nodes/taints.h"

namespace gpuop::op {
namespace {

bool IsStartupTaint(const kube::Taint& t) {
  return t.key == kStartupTaintKey || t.key == kAutoscalerStartupTaintKey;
}

// A quantity other than zero ("8", "1k"); "0", "" and anything starting with '-' are not.
bool Positive(absl::string_view quantity) {
  if (quantity.empty() || quantity[0] == '-') return false;
  return std::any_of(quantity.begin(), quantity.end(), [](char c) { return c >= '1' && c <= '9'; });
}

}  // namespace

bool HasStartupTaint(const kube::Node& node) {
  return std::any_of(node.taints.begin(), node.taints.end(), IsStartupTaint);
}

bool GpuStackReady(const kube::Node& node, const PolicySpec& policy) {
  if (policy.Enabled(Component::kValidator)) {
    const kube::Condition* validated = kube::FindCondition(node.conditions, "GPUValidated");
    return validated != nullptr && validated->status == "True";
  }
  for (const auto& [key, value] : node.allocatable) {
    const absl::string_view name = key;
    const bool gpu = absl::StartsWith(name, "nvidia.com/") || name == "amd.com/gpu";
    if (gpu && Positive(value)) return true;
  }
  return false;
}

std::optional<nlohmann::json> StartupTaintRemoval(const kube::Node& node) {
  if (!HasStartupTaint(node)) return std::nullopt;
  nlohmann::json taints = nlohmann::json::array();
  for (const kube::Taint& t : node.taints) {
    if (!IsStartupTaint(t)) taints.push_back(TaintToJson(t));
  }
  return nlohmann::json{{"metadata", {{"resourceVersion", node.metadata.resource_version}}},
                        {"spec", {{"taints", taints}}}};
}

}  // namespace gpuop::op
