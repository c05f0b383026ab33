#include "operator/nodes/node_labels.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "operator/render/render.h"

namespace gpuop::op {

namespace {

bool LabelIs(const kube::Node& node, absl::string_view key, absl::string_view value) {
  auto v = node.metadata.labels.Get(key);
  return v.has_value() && *v == value;
}

}  // namespace

bool IsGpuNode(const kube::Node& node) {
  return LabelIs(node, kNfdNvidiaLabel, "true") || LabelIs(node, kNfdAmdLabel, "true") ||
         LabelIs(node, kAgentGpuPresentLabel, "true");
}

bool PoolAssignment::Conflicted(const std::string& node) const {
  for (const auto& [pool, nodes] : conflicts) {
    if (std::find(nodes.begin(), nodes.end(), node) != nodes.end()) return true;
  }
  return false;
}

PoolAssignment AssignPools(const std::vector<const kube::Node*>& gpu_nodes,
                           const std::vector<NodePool>& pools) {
  PoolAssignment a;
  for (const auto& pool : pools) a.members[pool.name] = 0;
  for (const kube::Node* node : gpu_nodes) {
    std::vector<const NodePool*> matched;
    for (const auto& pool : pools) {
      if (pool.node_selector.Matches(node->metadata.labels)) matched.push_back(&pool);
    }
    if (matched.size() == 1) {
      a.pool_of[node->metadata.name] = matched[0]->name;
      ++a.members[matched[0]->name];
    } else if (matched.size() > 1) {
      for (const NodePool* pool : matched) a.conflicts[pool->name].push_back(node->metadata.name);
    }
  }
  for (auto& [pool, nodes] : a.conflicts) std::sort(nodes.begin(), nodes.end());
  return a;
}

std::string TimeSlicingConfigName(const std::string& pool) { return absl::StrCat("pool-", pool); }

NodeLabelChange DesiredNodeLabels(const kube::Node& node, const std::vector<std::string>& owned,
                                  const PolicySpec* policy, const NodePool* pool, bool conflicted) {
  NodeLabelChange change;
  std::map<std::string, std::string>& want = change.desired;
  bool managed = policy != nullptr && IsGpuNode(node);
  if (managed) {
    for (const auto& [k, v] : policy->node_selector) managed = managed && LabelIs(node, k, v);
  }
  const auto current = [&](const std::string& key) { return node.metadata.labels.Get(key); };
  const auto is_owned = [&](const std::string& key) {
    return std::find(owned.begin(), owned.end(), key) != owned.end();
  };
  if (managed) {
    want[kManagedLabel] = "true";
    const bool operands_off = LabelIs(node, kDeployOperandsLabel, "false");
    // AMD only: NFD saw AMD and nothing says NVIDIA (NFD or the agent's GPU feature labels).
    const bool amd_only = LabelIs(node, kNfdAmdLabel, "true") &&
                          !LabelIs(node, kNfdNvidiaLabel, "true") &&
                          !LabelIs(node, "nvidia.com/gpu.present", "true");
    for (Component c : kAllComponents) {
      if (!policy->Enabled(c) || operands_off) continue;
      const std::string key = absl::StrCat(kDeployLabelPrefix, ComponentName(c));
      std::string value = "true";
      if (c == Component::kDriver && LabelIs(node, kDriverPreinstalledLabel, "true")) {
        value = kHostDriverValue;
      }
      if (amd_only && (c == Component::kDriver || c == Component::kMigManager)) {
        value = kNotApplicableValue;
      }
      auto now = current(key);
      // Someone else's value (a pause) stands: the operator only sets what it owns or what is
      // missing.
      if (now.has_value() && !is_owned(key) && *now != value) continue;
      want[key] = value;
    }
    // Pool-derived settings; a node in conflict keeps whatever it has.
    auto pool_label = [&](const char* key, const std::optional<std::string>& value) {
      if (conflicted) {
        if (auto now = current(key); now.has_value() && is_owned(key))
          want[key] = std::string(*now);
        return;
      }
      if (value.has_value()) want[key] = *value;
    };
    std::optional<std::string> driver_pool = "default";
    std::optional<std::string> plugin_config;
    std::optional<std::string> mig_layout;
    if (pool != nullptr) {
      if (pool->driver_version.has_value() || pool->driver_repository.has_value()) {
        driver_pool = pool->name;
      }
      plugin_config = pool->device_plugin_config;
      if (!plugin_config.has_value() && pool->time_slicing_replicas.has_value()) {
        plugin_config = TimeSlicingConfigName(pool->name);
      }
      mig_layout = pool->mig_layout;
    }
    pool_label(kDriverPoolLabel, driver_pool);
    pool_label(kDevicePluginConfigLabel, plugin_config);
    pool_label(kMigConfigLabel, mig_layout);
  }
  for (const auto& [k, v] : want) {
    auto now = current(k);
    if (!now.has_value() || *now != v || !is_owned(k)) change.needed = true;
  }
  for (const auto& k : owned) {
    if (!want.contains(k)) change.needed = true;
  }
  return change;
}

bool IsNodeLabellingKey(absl::string_view key) {
  return key == kManagedLabel || absl::StartsWith(key, kDeployLabelPrefix) ||
         key == kDriverPoolLabel || key == kDevicePluginConfigLabel || key == kMigConfigLabel;
}

std::vector<std::string> OwnedLabelKeys(const nlohmann::json& object, const std::string& manager) {
  std::vector<std::string> keys;
  const nlohmann::json& meta = object.value("metadata", nlohmann::json::object());
  auto fields = meta.find("managedFields");
  if (fields == meta.end() || !fields->is_array()) return keys;
  for (const auto& entry : *fields) {
    if (!entry.is_object() || entry.value("manager", "") != manager) continue;
    const nlohmann::json& v1 = entry.value("fieldsV1", nlohmann::json::object());
    auto m = v1.find("f:metadata");
    if (m == v1.end() || !m->is_object()) continue;
    auto labels = m->find("f:labels");
    if (labels == m->end() || !labels->is_object()) continue;
    for (const auto& [k, unused] : labels->items()) {
      if (absl::StartsWith(k, "f:")) keys.push_back(k.substr(2));
    }
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

}  // namespace gpuop::op
