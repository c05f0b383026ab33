#include "operator/uninstall/node_cleanup.h"

#include <set>
#include <string>

#include "absl/strings/match.h"
#include "common/json_access.h"
#include "operator/api/node_state.h"
#include "operator/nodes/node_labels.h"

namespace gpuop::op::uninstall {
namespace {

using Json = nlohmann::json;

constexpr char kPrefix[] = "gpuop.io/";

const Json& Field(const Json& object, absl::string_view a, absl::string_view b) {
  return common::JsonField(common::JsonField(object, a), b);
}

// gpuop's field managers: the operator's and every agent module's.
std::set<std::string> GpuopManagers(const Json& node) {
  std::set<std::string> out;
  const Json& fields = Field(node, "metadata", "managedFields");
  if (!fields.is_array()) return out;
  for (const Json& entry : fields) {
    const std::string name = common::JsonString(entry, "manager");
    if (name == "gpuop-operator" || absl::StartsWith(name, "gpuop-agent")) out.insert(name);
  }
  return out;
}

}  // namespace

std::optional<Json> NodeCleanupPatch(const Json& node) {
  Json patch = Json::object();
  std::set<std::string> labels;
  const Json& current = Field(node, "metadata", "labels");
  if (current.is_object()) {
    for (const auto& [key, value] : current.items()) {
      if (absl::StartsWith(key, kPrefix)) labels.insert(key);
    }
  }
  for (const std::string& manager : GpuopManagers(node)) {
    for (const std::string& key : OwnedLabelKeys(node, manager)) {
      if (current.is_object() && current.contains(key)) labels.insert(key);
    }
  }
  for (const std::string& key : labels) patch["metadata"]["labels"][key] = nullptr;

  const Json& annotations = Field(node, "metadata", "annotations");
  if (annotations.is_object()) {
    for (const auto& [key, value] : annotations.items()) {
      if (absl::StartsWith(key, kPrefix)) patch["metadata"]["annotations"][key] = nullptr;
    }
  }

  const Json& taints = Field(node, "spec", "taints");
  if (taints.is_array()) {
    Json kept = Json::array();
    for (const Json& taint : taints) {
      const bool ours = absl::StartsWith(common::JsonString(taint, "key"), kPrefix);
      if (!ours) kept.push_back(taint);
    }
    if (kept.size() != taints.size()) patch["spec"]["taints"] = kept;
  }

  const bool cordoned = Field(node, "spec", "unschedulable") == true;
  const bool gpuop_state = current.is_object() && (current.contains(kUpgradeStateLabel) ||
                                                   current.contains(kRemediationStateLabel));
  const bool before = annotations.is_object() && annotations.contains(kWasCordonedAnnotation);
  if (cordoned && gpuop_state && !before) patch["spec"]["unschedulable"] = false;

  if (patch.empty()) return std::nullopt;
  return patch;
}

}  // namespace gpuop::op::uninstall
