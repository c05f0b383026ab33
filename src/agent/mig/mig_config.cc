#include "agent/mig/mig_config.h"

#include <algorithm>
#include <cstdlib>
#include <set>

#include <yaml-cpp/yaml.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/files.h"
#include "common/status_macros.h"
#include "common/yaml_fields.h"

namespace gpuop::agent::mig {
namespace {

using Reader = common::YamlFields;

absl::StatusOr<DeviceSelector> ParseDevices(const YAML::Node& node, const std::string& field,
                                            const Reader& r) {
  DeviceSelector selector;
  if (node.IsScalar()) {
    if (node.Scalar() != "all") {
      return r.Error(field, absl::StrCat("must be \"all\" or a list of GPU indexes, got \"",
                                         node.Scalar(), "\""));
    }
    return selector;
  }
  if (!node.IsSequence() || node.size() == 0) {
    return r.Error(field, "must be \"all\" or a non-empty list of GPU indexes");
  }
  selector.all = false;
  std::set<int> seen;
  for (size_t i = 0; i < node.size(); ++i) {
    GPUOP_ASSIGN_OR_RETURN(int index, r.Count(node[i], absl::StrCat(field, "[", i, "]")));
    // mig-parted takes a repeated index as the same GPU.
    if (seen.insert(index).second) selector.indexes.push_back(index);
  }
  return selector;
}

// A 32-bit id as mig-parted reads it (Go's ParseInt with base 0): "0x20B010DE" or decimal.
std::optional<uint32_t> ParseId(absl::string_view text) {
  uint32_t value = 0;
  const bool hex = absl::StartsWithIgnoreCase(text, "0x");
  if (hex ? absl::SimpleHexAtoi(text, &value) : absl::SimpleAtoi(text, &value)) return value;
  return std::nullopt;
}

bool LooksLikeId(absl::string_view text) {
  return !text.empty() && absl::ascii_isdigit(static_cast<unsigned char>(text[0]));
}

absl::Status ParseFilter(const YAML::Node& node, const std::string& field, const Reader& r,
                         MigConfigEntry& entry) {
  std::vector<std::pair<std::string, std::string>> items;  // value, field
  if (node.IsScalar()) {
    items.emplace_back(node.Scalar(), field);
  } else if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      const std::string item_field = absl::StrCat(field, "[", i, "]");
      GPUOP_ASSIGN_OR_RETURN(std::string p, r.String(node[i], item_field));
      items.emplace_back(std::move(p), item_field);
    }
  } else {
    return r.Error(field, "must be a PCI device id (\"0x20B010DE\") or a list of them");
  }
  for (const auto& [value, item_field] : items) {
    if (value.empty()) return r.Error(item_field, "is empty");
    if (!LooksLikeId(value)) {
      entry.device_filter.push_back(value);  // a product name (gpuop extension)
      continue;
    }
    const std::vector<std::string> parts = absl::StrSplit(value, ':');
    PciIdFilter id;
    std::optional<uint32_t> device = ParseId(parts[0]);
    if (parts.size() > 2 || !device.has_value()) {
      return r.Error(item_field, absl::StrCat("\"", value,
                                              "\" is not a PCI device id: expected device << 16 | "
                                              "vendor in hex (\"0x20B010DE\"), optionally "
                                              "\":<subsystem id>\""));
    }
    id.device_id = *device;
    if (parts.size() == 2) {
      id.subsystem_id = ParseId(parts[1]);
      if (!id.subsystem_id.has_value()) {
        return r.Error(item_field, absl::StrCat("\"", value, "\": the subsystem id \"", parts[1],
                                                "\" is not a 32-bit id (\"0x16C110DE\")"));
      }
    }
    entry.pci_ids.push_back(id);
  }
  return absl::OkStatus();
}

absl::StatusOr<MigConfigEntry> ParseEntry(const YAML::Node& node, const std::string& field,
                                          const Reader& r) {
  GPUOP_RETURN_IF_ERROR(
      r.OnlyKeys(node, field, {"devices", "device-filter", "mig-enabled", "mig-devices"}));
  MigConfigEntry entry;
  if (!node["devices"]) return r.Error(field + ".devices", "required");
  GPUOP_ASSIGN_OR_RETURN(entry.devices, ParseDevices(node["devices"], field + ".devices", r));
  if (node["device-filter"]) {
    GPUOP_RETURN_IF_ERROR(ParseFilter(node["device-filter"], field + ".device-filter", r, entry));
  }
  if (!node["mig-enabled"]) return r.Error(field + ".mig-enabled", "required");
  GPUOP_ASSIGN_OR_RETURN(entry.mig_enabled, r.Bool(node["mig-enabled"], field + ".mig-enabled"));
  const YAML::Node devices = node["mig-devices"];
  const std::string devices_field = field + ".mig-devices";
  if (!devices || devices.IsNull()) {
    if (entry.mig_enabled) {
      return r.Error(devices_field, "required when mig-enabled is true (may be {})");
    }
    return entry;
  }
  if (!devices.IsMap()) return r.Error(devices_field, "must be a map of profile to count");
  for (const auto& item : devices) {
    const std::string profile = item.first.as<std::string>();
    const std::string item_field = absl::StrCat(devices_field, ".", profile);
    if (profile.empty() || !absl::ascii_isdigit(static_cast<unsigned char>(profile[0])) ||
        profile.find('g') == std::string::npos) {
      return r.Error(item_field, "is not a MIG profile name (\"1g.10gb\")");
    }
    GPUOP_ASSIGN_OR_RETURN(int count, r.Count(item.second, item_field));
    if (count > 0) entry.mig_devices[profile] = count;
  }
  if (!entry.mig_enabled && !entry.mig_devices.empty()) {
    return r.Error(devices_field, "MIG devices require mig-enabled: true");
  }
  return entry;
}

absl::StatusOr<MigConfig> Parse(const YAML::Node& root, const Reader& r) {
  GPUOP_RETURN_IF_ERROR(r.OnlyKeys(root, "", {"version", "mig-configs"}));
  if (!root["version"]) return r.Error("version", "required");
  GPUOP_ASSIGN_OR_RETURN(std::string version, r.String(root["version"], "version"));
  if (version != "v1") return r.Error("version", absl::StrCat("\"", version, "\" is not v1"));
  const YAML::Node configs = root["mig-configs"];
  if (!configs) return r.Error("mig-configs", "required");
  if (!configs.IsMap()) return r.Error("mig-configs", "must be a map of layout name to entries");
  if (configs.size() == 0) return r.Error("mig-configs", "defines no layout");
  MigConfig config;
  for (const auto& item : configs) {
    const std::string name = item.first.as<std::string>();
    const std::string field = absl::StrCat("mig-configs.", name);
    if (name.empty()) return r.Error("mig-configs", "a layout name is empty");
    if (!item.second.IsSequence() || item.second.size() == 0) {
      return r.Error(field, "must be a non-empty list of entries");
    }
    std::vector<MigConfigEntry>& entries = config.layouts[name];
    for (size_t i = 0; i < item.second.size(); ++i) {
      GPUOP_ASSIGN_OR_RETURN(MigConfigEntry entry,
                             ParseEntry(item.second[i], absl::StrCat(field, "[", i, "]"), r));
      entries.push_back(std::move(entry));
    }
  }
  return config;
}

bool FilterSelects(const MigConfigEntry& entry, const hw::Gpu& gpu) {
  if (entry.device_filter.empty() && entry.pci_ids.empty()) return true;
  const bool by_id = std::any_of(entry.pci_ids.begin(), entry.pci_ids.end(), [&](const auto& id) {
    return id.device_id == gpu.pci_device_id &&
           (!id.subsystem_id.has_value() || *id.subsystem_id == gpu.pci_subsystem_id);
  });
  return by_id ||
         std::any_of(entry.device_filter.begin(), entry.device_filter.end(),
                     [&](const std::string& p) { return absl::EqualsIgnoreCase(p, gpu.product); });
}

// Slices of a profile as its name states them ("3g.20gb" -> 3), for ordering messages.
int NamedSlices(const std::string& profile) { return std::atoi(profile.c_str()); }

}  // namespace

absl::StatusOr<MigConfig> ParseMigConfig(absl::string_view yaml, absl::string_view source) {
  const Reader reader(absl::StrCat("mig config ", source));
  try {
    absl::StatusOr<MigConfig> config = Parse(YAML::Load(std::string(yaml)), reader);
    if (config.ok()) config->source = std::string(source);
    return config;
  } catch (const YAML::Exception& e) {
    return reader.Error(absl::StrCat("line ", e.mark.line + 1), e.msg);
  }
}

absl::StatusOr<MigConfig> LoadMigConfig(const std::filesystem::path& path) {
  absl::StatusOr<std::string> text = common::ReadFile(path);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        absl::StrCat("read mig config: ", text.status().message()));
  }
  return ParseMigConfig(*text, path.string());
}

absl::StatusOr<DesiredLayout> ResolveLayout(const MigConfig& config, const std::string& name,
                                            const std::vector<hw::Gpu>& gpus) {
  const auto it = config.layouts.find(name);
  if (it == config.layouts.end()) {
    std::vector<std::string> known;
    for (const auto& [n, entries] : config.layouts) known.push_back(n);
    return absl::InvalidArgumentError(
        absl::StrCat("MIG layout \"", name, "\" is not defined in ",
                     config.source.empty() ? "the config" : config.source,
                     " (defined: ", known.empty() ? "none" : absl::StrJoin(known, ", "), ")"));
  }
  DesiredLayout desired;
  for (const MigConfigEntry& entry : it->second) {
    for (const hw::Gpu& gpu : gpus) {
      if (!FilterSelects(entry, gpu)) continue;
      if (entry.devices.all) {
        if (!gpu.mig_capable) continue;  // mig-parted: "non MIG-capable GPU", skipped
      } else {
        if (std::find(entry.devices.indexes.begin(), entry.devices.indexes.end(), gpu.index) ==
            entry.devices.indexes.end()) {
          continue;
        }
        if (!gpu.mig_capable && !entry.mig_enabled) continue;  // nothing to do on it
      }
      // A later entry selecting the same GPU replaces an earlier one, as applying them in
      // order does.
      desired[gpu.index] = {.mig_enabled = entry.mig_enabled, .mig_devices = entry.mig_devices};
    }
  }
  return desired;
}

std::string DescribeLayout(const GpuLayout& layout) {
  if (!layout.mig_enabled) return "MIG disabled";
  if (layout.mig_devices.empty()) return "MIG enabled, no devices";
  std::vector<std::pair<std::string, int>> items(layout.mig_devices.begin(),
                                                 layout.mig_devices.end());
  std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
    return NamedSlices(a.first) > NamedSlices(b.first);
  });
  return absl::StrJoin(items, ", ", [](std::string* out, const auto& item) {
    absl::StrAppend(out, item.second, "x", item.first);
  });
}

}  // namespace gpuop::agent::mig
