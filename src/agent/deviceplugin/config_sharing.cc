// The `resources`, `sharing` and `imex` sections of the device plugin configuration.
#include <algorithm>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/deviceplugin/config_parse.h"
#include "common/status_macros.h"

namespace gpuop::agent::config_parse {
namespace {

using common::YamlFields;

absl::StatusOr<std::string> ResourceName(const YAML::Node& node, const YamlFields& r,
                                         const std::string& field) {
  GPUOP_ASSIGN_OR_RETURN(std::string name, r.String(node, field));
  absl::StatusOr<std::string> full = QualifiedResourceName(name);
  if (!full.ok()) return r.Error(field, full.status().message());
  return *full;
}

bool AllDigits(absl::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return absl::ascii_isdigit(c); });
}

// A PCI address in sysfs form, "0000:17:00.0" (gpuop: AMD GPUs are named by it).
bool IsPciAddress(absl::string_view s) {
  if (s.size() != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (!absl::ascii_isxdigit(s[i])) return false;
  }
  return s[11] >= '0' && s[11] <= '7';
}

// A device reference of a sharing rule: GPU index, MIG index "<gpu>:<mig>", GPU or MIG UUID.
bool IsDeviceRef(absl::string_view s) {
  if (AllDigits(s)) return true;
  std::vector<absl::string_view> parts = absl::StrSplit(s, ':');
  if (parts.size() == 2 && AllDigits(parts[0]) && AllDigits(parts[1])) return true;
  if ((absl::StartsWith(s, "GPU-") || absl::StartsWith(s, "MIG-")) && s.size() > 4) return true;
  return IsPciAddress(s);
}

absl::StatusOr<ReplicatedDevices> ParseDevices(const YAML::Node& node, const YamlFields& r,
                                               const std::string& field) {
  ReplicatedDevices out;
  if (node.IsScalar()) {
    int count = 0;
    if (YAML::convert<int>::decode(node, count)) {
      if (count <= 0) return r.Error(field, "a count of devices must be > 0");
      out.all = false;
      out.count = count;
      return out;
    }
    if (node.Scalar() != "all") {
      return r.Error(field, absl::StrCat("\"", node.Scalar(),
                                         "\": must be all, a count or a list of devices"));
    }
    return out;
  }
  if (!node.IsSequence()) return r.Error(field, "must be all, a count or a list of devices");
  out.all = false;
  for (size_t d = 0; d < node.size(); ++d) {
    const std::string dfield = absl::StrCat(field, "[", d, "]");
    GPUOP_ASSIGN_OR_RETURN(std::string id, r.String(node[d], dfield));
    if (!IsDeviceRef(id)) {
      return r.Error(dfield, absl::StrCat("\"", id,
                                          "\": must be a GPU index, a MIG index <gpu>:<mig>, or "
                                          "a GPU or MIG UUID"));
    }
    out.list.push_back(std::move(id));
  }
  if (out.list.empty()) return r.Error(field, "an empty list selects no device");
  return out;
}

absl::Status ParseReplicated(const YAML::Node& node, const YamlFields& r, const std::string& base,
                             DevicePluginConfig& config) {
  GPUOP_RETURN_IF_ERROR(r.OnlyKeys(
      node, base, {"renameByDefault", "failRequestsGreaterThanOne", "resources", "strategy"}));
  if (Present(node["strategy"])) {  // older NVIDIA releases; only the unnamed default existed
    GPUOP_ASSIGN_OR_RETURN(std::string s, r.String(node["strategy"], base + ".strategy"));
    if (!s.empty()) {
      return r.Error(base + ".strategy", absl::StrCat("\"", s, "\": unknown strategy"));
    }
  }
  if (Present(node["renameByDefault"])) {
    GPUOP_ASSIGN_OR_RETURN(config.rename_by_default,
                           r.Bool(node["renameByDefault"], base + ".renameByDefault"));
  }
  if (Present(node["failRequestsGreaterThanOne"])) {
    GPUOP_ASSIGN_OR_RETURN(
        config.fail_requests_greater_than_one,
        r.Bool(node["failRequestsGreaterThanOne"], base + ".failRequestsGreaterThanOne"));
  }
  const YAML::Node resources = node["resources"];
  if (!Present(resources)) return absl::OkStatus();
  if (!resources.IsSequence()) return r.Error(base + ".resources", "must be a list");
  // A device may be in one rule per resource only.
  std::set<std::pair<std::string, std::string>> seen_devices;
  std::set<std::string> whole_resource_rules;
  for (size_t i = 0; i < resources.size(); ++i) {
    const std::string field = absl::StrCat(base, ".resources[", i, "]");
    const YAML::Node rule = resources[i];
    GPUOP_RETURN_IF_ERROR(r.OnlyKeys(rule, field, {"name", "rename", "devices", "replicas"}));
    SharingRule out;
    if (!Present(rule["name"])) return r.Error(field + ".name", "required");
    GPUOP_ASSIGN_OR_RETURN(out.resource, ResourceName(rule["name"], r, field + ".name"));
    if (!Present(rule["replicas"])) return r.Error(field + ".replicas", "required");
    GPUOP_ASSIGN_OR_RETURN(out.replicas, r.Int(rule["replicas"], field + ".replicas"));
    if (out.replicas < 1) return r.Error(field + ".replicas", "must be >= 1");
    if (out.replicas > 1024) return r.Error(field + ".replicas", "must be <= 1024");
    if (config.mps && out.replicas > kMpsMaxClients) {
      return r.Error(field + ".replicas", absl::StrCat("must be <= ", kMpsMaxClients,
                                                       ", the most clients an MPS server takes"));
    }
    if (Present(rule["rename"])) {
      bool flag = false;
      if (rule["rename"].IsScalar() && YAML::convert<bool>::decode(rule["rename"], flag)) {
        return r.Error(field + ".rename",
                       "is the resource name to advertise the shared devices under (NVIDIA's "
                       "format), not a boolean; renameByDefault renames to <name>.shared");
      }
      GPUOP_ASSIGN_OR_RETURN(out.rename, ResourceName(rule["rename"], r, field + ".rename"));
    }
    if (Present(rule["devices"])) {
      GPUOP_ASSIGN_OR_RETURN(out.devices, ParseDevices(rule["devices"], r, field + ".devices"));
    }
    for (size_t d = 0; d < out.devices.list.size(); ++d) {
      if (!seen_devices.emplace(out.resource, out.devices.list[d]).second) {
        return r.Error(
            absl::StrCat(field, ".devices[", d, "]"),
            absl::StrCat("\"", out.devices.list[d], "\" is already shared by another rule"));
      }
    }
    if (out.devices.all && !whole_resource_rules.insert(out.resource).second) {
      return r.Error(field + ".devices",
                     absl::StrCat("a second rule for every device of ", out.resource,
                                  "; name devices to give them different replica counts"));
    }
    config.sharing.push_back(std::move(out));
  }
  return absl::OkStatus();
}

absl::Status ParsePatterns(const YAML::Node& node, const YamlFields& r, const std::string& base,
                           std::vector<ResourcePattern>& out) {
  if (!node.IsSequence()) return r.Error(base, "must be a list");
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string field = absl::StrCat(base, "[", i, "]");
    GPUOP_RETURN_IF_ERROR(r.OnlyKeys(node[i], field, {"pattern", "name"}));
    ResourcePattern p;
    if (!Present(node[i]["pattern"])) return r.Error(field + ".pattern", "required");
    if (!Present(node[i]["name"])) return r.Error(field + ".name", "required");
    GPUOP_ASSIGN_OR_RETURN(p.pattern, r.String(node[i]["pattern"], field + ".pattern"));
    GPUOP_ASSIGN_OR_RETURN(p.name, ResourceName(node[i]["name"], r, field + ".name"));
    out.push_back(std::move(p));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseResources(const YAML::Node& node, const YamlFields& r,
                            DevicePluginConfig& config) {
  GPUOP_RETURN_IF_ERROR(r.OnlyKeys(node, "resources", {"gpus", "mig"}));
  if (Present(node["gpus"])) {
    GPUOP_RETURN_IF_ERROR(ParsePatterns(node["gpus"], r, "resources.gpus", config.gpu_resources));
  }
  if (Present(node["mig"])) {
    GPUOP_RETURN_IF_ERROR(ParsePatterns(node["mig"], r, "resources.mig", config.mig_resources));
  }
  return absl::OkStatus();
}

absl::Status ParseSharing(const YAML::Node& node, const YamlFields& r, DevicePluginConfig& config) {
  GPUOP_RETURN_IF_ERROR(r.OnlyKeys(node, "sharing", {"timeSlicing", "mps"}));
  const bool mps = Present(node["mps"]);
  if (mps && Present(node["timeSlicing"]) && Present(node["timeSlicing"]["resources"])) {
    // NVIDIA's plugin would use MPS and drop the time-slicing rules without a word.
    return r.Error("sharing.mps",
                   "cannot be combined with sharing.timeSlicing rules; a node shares its GPUs one "
                   "way");
  }
  if (!mps && !Present(node["timeSlicing"])) return absl::OkStatus();
  config.mps = mps;
  // NVIDIA refuses requests for more than one MPS replica unless the file allows them.
  if (mps) config.fail_requests_greater_than_one = true;
  const std::string base = mps ? "sharing.mps" : "sharing.timeSlicing";
  GPUOP_RETURN_IF_ERROR(ParseReplicated(mps ? node["mps"] : node["timeSlicing"], r, base, config));
  for (const SharingRule& rule : config.sharing) {
    if (rule.replicas > 1) {
      config.sharing_strategy = mps ? SharingStrategy::kMps : SharingStrategy::kTimeSlicing;
    }
  }
  return absl::OkStatus();
}

absl::Status ParseImex(const YAML::Node& node, const YamlFields& r, DevicePluginConfig& config) {
  GPUOP_RETURN_IF_ERROR(r.OnlyKeys(node, "imex", {"channelIDs", "required"}));
  if (Present(node["channelIDs"])) {
    const YAML::Node ids = node["channelIDs"];
    if (!ids.IsSequence()) return r.Error("imex.channelIDs", "must be a list");
    for (size_t i = 0; i < ids.size(); ++i) {
      GPUOP_ASSIGN_OR_RETURN(int id, r.Count(ids[i], absl::StrCat("imex.channelIDs[", i, "]")));
      config.imex_channel_ids.push_back(id);
    }
    // As NVIDIA's plugin: only channel 0 can be handed to every container.
    if (!(config.imex_channel_ids.empty() ||
          (config.imex_channel_ids.size() == 1 && config.imex_channel_ids[0] == 0))) {
      return r.Error("imex.channelIDs", "must be [] or [0]");
    }
  }
  if (Present(node["required"])) {
    GPUOP_ASSIGN_OR_RETURN(config.imex_required, r.Bool(node["required"], "imex.required"));
  }
  return absl::OkStatus();
}

}  // namespace gpuop::agent::config_parse
