#include "operator/nodes/node_labels.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/power/policy_label.h"
#include "common/json_access.h"
#include "operator/api/node_state.h"
#include "operator/nodes/driver_clients.h"
#include "operator/render/render.h"

namespace gpuop::op {

namespace {

bool LabelIs(const kube::Node& node, absl::string_view key, absl::string_view value) {
  auto v = node.metadata.labels.Get(key);
  return v.has_value() && *v == value;
}

}  // namespace

namespace {

std::optional<uint16_t> HexField(absl::string_view field) {
  if (field.size() != 4) return std::nullopt;
  uint16_t value = 0;
  for (char c : field) {
    const char lower = absl::ascii_tolower(static_cast<unsigned char>(c));
    int digit = 0;
    if (lower >= '0' && lower <= '9') {
      digit = lower - '0';
    } else if (lower >= 'a' && lower <= 'f') {
      digit = lower - 'a' + 10;
    } else {
      return std::nullopt;
    }
    value = static_cast<uint16_t>(value << 4 | digit);
  }
  return value;
}

bool IsGpuVendor(uint16_t id) { return id == kPciVendorNvidia || id == kPciVendorAmd; }

// NFD's default deviceClassWhitelist: "03", "0b40", "12" (prefixes of the 4-digit class).
bool IsGpuClass(uint16_t class4) {
  const uint8_t base = static_cast<uint8_t>(class4 >> 8);
  return base == 0x03 || base == 0x12 || class4 == 0x0b40;
}

}  // namespace

std::optional<uint16_t> NfdPciGpuVendor(absl::string_view key) {
  if (!absl::ConsumePrefix(&key, kNfdPciLabelPrefix) || !absl::ConsumeSuffix(&key, ".present")) {
    return std::nullopt;
  }
  std::vector<absl::string_view> fields = absl::StrSplit(key, '_');
  if (fields.empty() || fields.size() > 5) return std::nullopt;
  std::vector<uint16_t> values;
  for (absl::string_view field : fields) {
    std::optional<uint16_t> value = HexField(field);
    if (!value.has_value()) return std::nullopt;
    values.push_back(*value);
  }
  // The class comes first when it is one of the fields; GPU classes (03xx, 0b40, 12xx) and GPU
  // vendors (10de, 1002) never look alike, so the two forms cannot be confused.
  if (values.size() >= 2 && IsGpuClass(values[0]) && IsGpuVendor(values[1])) return values[1];
  if (IsGpuVendor(values[0])) return values[0];
  return std::nullopt;
}

NodeGpus GpusOf(const kube::Node& node) {
  NodeGpus gpus;
  bool present = false;
  for (const auto& [key, value] : node.metadata.labels) {
    const absl::string_view k = key;
    const absl::string_view v = value;
    if (v != "true" && k != kAgentGpuVendorLabel) continue;
    if (k == kAgentGpuPresentLabel) {
      present = true;
    } else if (k == kGfdGpuPresentLabel) {
      gpus.nvidia = true;
    } else if (k == kAgentGpuVendorLabel) {
      gpus.nvidia = gpus.nvidia || v == "nvidia" || v == "mixed";
      gpus.amd = gpus.amd || v == "amd" || v == "mixed";
    } else if (absl::StartsWith(k, kNfdPciLabelPrefix)) {
      const std::optional<uint16_t> vendor = NfdPciGpuVendor(k);
      gpus.nvidia = gpus.nvidia || vendor == kPciVendorNvidia;
      gpus.amd = gpus.amd || vendor == kPciVendorAmd;
    }
  }
  gpus.unknown_vendor = present && !gpus.nvidia && !gpus.amd;
  return gpus;
}

bool IsGpuNode(const kube::Node& node) { return GpusOf(node).any(); }

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

std::optional<std::string> NodeOsTag(const kube::Node& node) {
  for (const auto& [id_key, version_key] : {std::pair{kNfdOsIdLabel, kNfdOsVersionLabel},
                                            std::pair{kAgentOsIdLabel, kAgentOsVersionLabel}}) {
    std::optional<absl::string_view> id = node.metadata.labels.Get(id_key);
    std::optional<absl::string_view> version = node.metadata.labels.Get(version_key);
    if (id.has_value() && version.has_value() && !id->empty() && !version->empty()) {
      return absl::StrCat(*id, *version);
    }
  }
  return std::nullopt;
}

std::optional<std::string> NodeDriverOs(const kube::Node& node, const DriverSpec& driver,
                                        absl::string_view kernel_version) {
  std::optional<std::string> os =
      driver.os_tag.empty() ? NodeOsTag(node) : std::optional<std::string>(driver.os_tag);
  if (!os.has_value()) return std::nullopt;
  std::string value = *os;
  if (driver.use_precompiled) {
    if (kernel_version.empty()) return std::nullopt;
    value = absl::StrCat(kernel_version, "-", *os);
  }
  // A label value: at most 63 of [A-Za-z0-9-_.], alphanumeric at both ends.
  const auto alnum = [](char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)); };
  if (value.size() > 63 || !alnum(value.front()) || !alnum(value.back())) return std::nullopt;
  for (char c : value) {
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return std::nullopt;
  }
  return value;
}

NodeLabelChange DesiredNodeLabels(const kube::Node& node, const std::vector<std::string>& owned,
                                  const PolicySpec* policy, const NodePool* pool, bool conflicted,
                                  bool driver_pod_on_node, absl::string_view kernel_version) {
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
  const std::string driver_key =
      absl::StrCat(kDeployLabelPrefix, ComponentName(Component::kDriver));
  // The driver runs on the node: it leaves only through the upgrade (driver_removal).
  const bool driver_running =
      driver_pod_on_node && LabelIs(node, driver_key, "true") && is_owned(driver_key);
  std::optional<std::string> removal;
  const auto keep_running_driver = [&](const char* reason) {
    want[driver_key] = "true";
    for (const char* key : {kDriverPoolLabel, kDriverOsLabel}) {
      if (auto now = current(key); now.has_value() && is_owned(key)) want[key] = std::string(*now);
    }
    removal = reason;
  };
  if (managed) {
    want[kManagedLabel] = "true";
    const bool operands_off = LabelIs(node, kDeployOperandsLabel, "false");
    // AMD only: something saw AMD GPUs and nothing says NVIDIA.
    const bool amd_only = GpusOf(node).amd_only();
    for (Component c : kAllComponents) {
      if (c == Component::kDriver && driver_running && (!policy->Enabled(c) || operands_off)) {
        keep_running_driver(operands_off ? kRemovalOperandsDisabled : kRemovalDriverDisabled);
        continue;
      }
      if (!policy->Enabled(c) || operands_off) continue;
      const std::string key = absl::StrCat(kDeployLabelPrefix, ComponentName(c));
      std::string value = "true";
      if (c == Component::kDriver && LabelIs(node, kDriverPreinstalledLabel, "true") &&
          !(driver_pod_on_node && LabelIs(node, key, "true"))) {
        value = kHostDriverValue;
      }
      if (amd_only && (c == Component::kDriver || c == Component::kMigManager)) {
        value = kNotApplicableValue;
      }
      auto now = current(key);
      // Someone else's value (a pause) stands: the operator only sets what it owns or what is
      // missing.
      if (now.has_value() && !is_owned(key) && *now != value) continue;
      // The operator's own pause around a driver restart (driver_clients.h) stands until the
      // controller that set it lifts it.
      if (now == std::optional<absl::string_view>(kPausedForDriverValue)) value = std::string(*now);
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
    std::optional<std::string> power_policy;
    if (pool != nullptr) {
      if (pool->power.has_value() && policy->Enabled(Component::kPowerManager)) {
        // The pool's settings over the policy's, complete, so that the agent needs nothing else.
        const NodePool::Power& p = *pool->power;
        power_policy = agent::power::FormatPowerPolicyLabel(
            {.enabled = p.enabled.value_or(true),
             .idle_after = p.idle_after.value_or(policy->components.power_idle_after),
             .floor_percent = p.floor_percent.value_or(policy->components.power_floor_percent)});
      }
      if (pool->driver_version.has_value() || pool->driver_repository.has_value()) {
        driver_pool = pool->name;
      }
      plugin_config = pool->device_plugin_config;
      if (!plugin_config.has_value() && pool->time_slicing_replicas.has_value()) {
        plugin_config = TimeSlicingConfigName(pool->name);
      }
      mig_layout = pool->mig_layout;
    }
    if (!removal.has_value()) {
      pool_label(kDriverPoolLabel, driver_pool);
      if (policy->Enabled(Component::kDriver) && DriverPerNode(policy->driver)) {
        std::optional<std::string> os = NodeDriverOs(node, policy->driver, kernel_version);
        // An OS no longer known (NFD's labels gone a while) keeps the driver it has.
        if (auto now = current(kDriverOsLabel);
            !os.has_value() && now.has_value() && is_owned(kDriverOsLabel)) {
          os = std::string(*now);
        }
        pool_label(kDriverOsLabel, os);
      }
    }
    // A running driver moves to another DaemonSet (another pool's, another OS's or kernel's)
    // through the upgrade, not at once. A driver.os label that is absent or to go is "-".
    if (!conflicted && !removal.has_value() && driver_pod_on_node) {
      for (const char* key : {kDriverPoolLabel, kDriverOsLabel}) {
        const bool os = key == std::string_view(kDriverOsLabel);
        std::optional<absl::string_view> now = current(key);
        if (now.has_value() && !is_owned(key)) continue;
        if (!now.has_value() && !os) continue;
        const std::string from = now.has_value() ? std::string(*now) : kNoDriverOs;
        const std::string to = want.contains(key) ? want[key] : kNoDriverOs;
        if (from == to) continue;
        (os ? change.os_target : change.pool_target) = to;
        if (now.has_value()) {
          want[key] = from;
        } else {
          want.erase(key);
        }
      }
    }
    pool_label(kDevicePluginConfigLabel, plugin_config);
    pool_label(kMigConfigLabel, mig_layout);
    pool_label(agent::power::kPowerPolicyLabel, power_policy);
  } else if (policy != nullptr && driver_running) {
    keep_running_driver(kRemovalNodeDeselected);
  } else if (policy == nullptr) {
    // No policy: the driver keeps running where it runs (its DaemonSet stays, see the policy
    // reconciler), so the labels that select it stay too.
    for (const std::string& key : {absl::StrCat(kDeployLabelPrefix, "driver"),
                                   std::string(kDriverPoolLabel), std::string(kDriverOsLabel)}) {
      if (auto now = current(key); now.has_value() && is_owned(key)) want[key] = std::string(*now);
    }
  }
  // The removal annotation: set while the running driver is to leave, removed while the driver
  // stays deployed; after the upgrade switched the driver off it is the upgrade's to remove.
  const std::optional<absl::string_view> removal_now =
      node.metadata.annotations.Get(kDriverRemovalAnnotation);
  if (removal.has_value()) {
    change.driver_removal = removal;
  } else if (removal_now.has_value() && want.contains(driver_key) && want[driver_key] == "true") {
    change.driver_removal = "";
  }
  if (change.driver_removal.has_value() && *change.driver_removal != removal_now.value_or("")) {
    change.needed = true;
  }
  // A target nobody wants any more goes.
  const auto settle = [&](const char* annotation, std::optional<std::string>& wanted) {
    const std::optional<absl::string_view> now = node.metadata.annotations.Get(annotation);
    if (!wanted.has_value() && now.has_value()) wanted = "";
    if (wanted.has_value() && *wanted != now.value_or("")) change.needed = true;
  };
  settle(kDriverPoolTargetAnnotation, change.pool_target);
  settle(kDriverOsTargetAnnotation, change.os_target);
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
         key == kDriverPoolLabel || key == kDriverOsLabel || key == kDevicePluginConfigLabel ||
         key == kMigConfigLabel || key == agent::power::kPowerPolicyLabel;
}

std::vector<std::string> OwnedLabelKeys(const nlohmann::json& object, const std::string& manager) {
  std::vector<std::string> keys;
  const nlohmann::json& fields =
      common::JsonField(common::JsonField(object, "metadata"), "managedFields");
  if (!fields.is_array()) return keys;
  for (const auto& entry : fields) {
    if (common::JsonString(entry, "manager") != manager) continue;
    const nlohmann::json& labels = common::JsonField(
        common::JsonField(common::JsonField(entry, "fieldsV1"), "f:metadata"), "f:labels");
    if (!labels.is_object()) continue;
    for (const auto& [k, unused] : labels.items()) {
      if (absl::StartsWith(k, "f:")) keys.push_back(k.substr(2));
    }
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

}  // namespace gpuop::op
