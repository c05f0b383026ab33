#include "agent/mig/mig_config.h"

#include <algorithm>
#include <cstdlib>
#include <set>

#include <yaml-cpp/yaml.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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
    if (!seen.insert(index).second) {
      return r.Error(absl::StrCat(field, "[", i, "]"), absl::StrCat("GPU ", index, " is repeated"));
    }
    selector.indexes.push_back(index);
  }
  return selector;
}

absl::StatusOr<std::vector<std::string>> ParseFilter(const YAML::Node& node,
                                                     const std::string& field, const Reader& r) {
  std::vector<std::string> products;
  if (node.IsScalar()) {
    products.push_back(node.Scalar());
  } else if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      GPUOP_ASSIGN_OR_RETURN(std::string p, r.String(node[i], absl::StrCat(field, "[", i, "]")));
      products.push_back(std::move(p));
    }
  } else {
    return r.Error(field, "must be a product name or a list of them");
  }
  for (const std::string& p : products) {
    if (p.empty()) return r.Error(field, "a product name is empty");
    if (absl::StartsWithIgnoreCase(p, "0x")) {
      return r.Error(field, absl::StrCat("\"", p,
                                         "\": PCI device ids are not supported; use the product "
                                         "name NVML reports (\"NVIDIA A100-SXM4-40GB\")"));
    }
  }
  return products;
}

absl::StatusOr<MigConfigEntry> ParseEntry(const YAML::Node& node, const std::string& field,
                                          const Reader& r) {
  GPUOP_RETURN_IF_ERROR(
      r.OnlyKeys(node, field, {"devices", "device-filter", "mig-enabled", "mig-devices"}));
  MigConfigEntry entry;
  if (!node["devices"]) return r.Error(field + ".devices", "required");
  GPUOP_ASSIGN_OR_RETURN(entry.devices, ParseDevices(node["devices"], field + ".devices", r));
  if (node["device-filter"]) {
    GPUOP_ASSIGN_OR_RETURN(entry.device_filter,
                           ParseFilter(node["device-filter"], field + ".device-filter", r));
  }
  if (!node["mig-enabled"]) return r.Error(field + ".mig-enabled", "required");
  GPUOP_ASSIGN_OR_RETURN(entry.mig_enabled, r.Bool(node["mig-enabled"], field + ".mig-enabled"));
  const YAML::Node devices = node["mig-devices"];
  if (!devices || devices.IsNull()) return entry;
  const std::string devices_field = field + ".mig-devices";
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
  MigConfig config;
  for (const auto& item : configs) {
    const std::string name = item.first.as<std::string>();
    const std::string field = absl::StrCat("mig-configs.", name);
    if (name.empty()) return r.Error("mig-configs", "a layout name is empty");
    if (!item.second.IsSequence()) return r.Error(field, "must be a list of entries");
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
  if (entry.device_filter.empty()) return true;
  return std::any_of(entry.device_filter.begin(), entry.device_filter.end(),
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
  std::map<int, size_t> selected_by;  // GPU index -> entry
  for (size_t e = 0; e < it->second.size(); ++e) {
    const MigConfigEntry& entry = it->second[e];
    const std::string field = absl::StrCat("mig-configs.", name, "[", e, "]");
    std::vector<const hw::Gpu*> chosen;
    if (entry.devices.all) {
      for (const hw::Gpu& gpu : gpus) chosen.push_back(&gpu);
    } else {
      for (int index : entry.devices.indexes) {
        const auto gpu = std::find_if(gpus.begin(), gpus.end(),
                                      [&](const hw::Gpu& g) { return g.index == index; });
        if (gpu == gpus.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat("MIG layout \"", name, "\": ", field, ".devices names GPU ", index,
                           ", which this node does not have (", gpus.size(), " GPUs)"));
        }
        chosen.push_back(&*gpu);
      }
    }
    for (const hw::Gpu* gpu : chosen) {
      if (!FilterSelects(entry, *gpu)) continue;
      if (const auto prior = selected_by.find(gpu->index); prior != selected_by.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("MIG layout \"", name, "\": ", field, " selects GPU ", gpu->index,
                         ", which mig-configs.", name, "[", prior->second, "] already selects"));
      }
      selected_by[gpu->index] = e;
      desired[gpu->index] = {.mig_enabled = entry.mig_enabled, .mig_devices = entry.mig_devices};
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
