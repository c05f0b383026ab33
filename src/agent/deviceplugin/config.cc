#include "agent/deviceplugin/config.h"

#include <set>

#include <yaml-cpp/yaml.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace gpuop::agent {
namespace {

class Reader {
 public:
  explicit Reader(absl::string_view source) : source_(source) {}

  absl::Status Error(const std::string& field, absl::string_view problem) const {
    return absl::InvalidArgumentError(absl::StrCat("config ", source_, ": ", field, ": ", problem));
  }

  absl::StatusOr<std::string> String(const YAML::Node& node, const std::string& field) const {
    if (!node.IsScalar()) return Error(field, "must be a string");
    return node.as<std::string>();
  }

  absl::StatusOr<bool> Bool(const YAML::Node& node, const std::string& field) const {
    bool value = false;
    if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
      return Error(field, "must be true or false");
    }
    return value;
  }

  absl::StatusOr<int> Int(const YAML::Node& node, const std::string& field) const {
    int value = 0;
    if (!node.IsScalar() || !YAML::convert<int>::decode(node, value)) {
      return Error(field, "must be an integer");
    }
    return value;
  }

  // Rejects keys outside `known`: a typo must not silently change nothing.
  absl::Status OnlyKeys(const YAML::Node& map, const std::string& field,
                        std::initializer_list<const char*> known) const {
    if (!map.IsMap()) return Error(field.empty() ? "(document)" : field, "must be a map");
    for (const auto& entry : map) {
      const std::string key = entry.first.as<std::string>();
      bool ok = false;
      for (const char* k : known) ok = ok || key == k;
      if (!ok) return Error(field.empty() ? key : absl::StrCat(field, ".", key), "unknown field");
    }
    return absl::OkStatus();
  }

 private:
  std::string source_;
};

bool IsExtendedResourceName(absl::string_view name) {
  const size_t slash = name.find('/');
  if (slash == absl::string_view::npos || slash == 0 || slash + 1 == name.size()) return false;
  const absl::string_view domain = name.substr(0, slash);
  return domain.find('.') != absl::string_view::npos && !absl::EndsWith(domain, "kubernetes.io") &&
         domain != "k8s.io";
}

absl::StatusOr<DevicePluginConfig> Parse(const YAML::Node& root, const Reader& r) {
  DevicePluginConfig config;
  if (!root || root.IsNull()) return config;
  GPUOP_RETURN_IF_ERROR(r.OnlyKeys(root, "", {"version", "flags", "sharing"}));
  if (root["version"]) {
    GPUOP_ASSIGN_OR_RETURN(std::string version, r.String(root["version"], "version"));
    if (version != "v1") return r.Error("version", absl::StrCat("\"", version, "\" is not v1"));
  }
  if (const YAML::Node flags = root["flags"]) {
    GPUOP_RETURN_IF_ERROR(r.OnlyKeys(flags, "flags", {"migStrategy", "deviceListStrategy"}));
    if (flags["migStrategy"]) {
      GPUOP_ASSIGN_OR_RETURN(std::string s, r.String(flags["migStrategy"], "flags.migStrategy"));
      if (s == "none") {
        config.mig_strategy = MigStrategy::kNone;
      } else if (s == "single") {
        config.mig_strategy = MigStrategy::kSingle;
      } else if (s == "mixed") {
        config.mig_strategy = MigStrategy::kMixed;
      } else {
        return r.Error("flags.migStrategy",
                       absl::StrCat("\"", s, "\": must be none, single or mixed"));
      }
    }
    if (flags["deviceListStrategy"]) {
      GPUOP_ASSIGN_OR_RETURN(std::string s,
                             r.String(flags["deviceListStrategy"], "flags.deviceListStrategy"));
      if (s == "cdi" || s == "cdi-cri") {
        config.device_list_strategy = DeviceListStrategy::kCdi;
      } else if (s == "envvar") {
        config.device_list_strategy = DeviceListStrategy::kEnvVar;
      } else if (s == "both") {
        config.device_list_strategy = DeviceListStrategy::kBoth;
      } else {
        return r.Error("flags.deviceListStrategy",
                       absl::StrCat("\"", s, "\": must be cdi, envvar or both"));
      }
    }
  }
  const YAML::Node sharing = root["sharing"];
  if (!sharing) return config;
  GPUOP_RETURN_IF_ERROR(r.OnlyKeys(sharing, "sharing", {"timeSlicing"}));
  const YAML::Node ts = sharing["timeSlicing"];
  if (!ts) return config;
  const std::string base = "sharing.timeSlicing";
  GPUOP_RETURN_IF_ERROR(
      r.OnlyKeys(ts, base, {"renameByDefault", "failRequestsGreaterThanOne", "resources"}));
  if (ts["renameByDefault"]) {
    GPUOP_ASSIGN_OR_RETURN(config.rename_by_default,
                           r.Bool(ts["renameByDefault"], base + ".renameByDefault"));
  }
  if (ts["failRequestsGreaterThanOne"]) {
    GPUOP_ASSIGN_OR_RETURN(
        config.fail_requests_greater_than_one,
        r.Bool(ts["failRequestsGreaterThanOne"], base + ".failRequestsGreaterThanOne"));
  }
  const YAML::Node resources = ts["resources"];
  if (!resources) return config;
  if (!resources.IsSequence()) return r.Error(base + ".resources", "must be a list");
  // A GPU may be in one rule per resource only.
  std::set<std::pair<std::string, std::string>> seen_devices;
  std::set<std::string> whole_resource_rules;
  for (size_t i = 0; i < resources.size(); ++i) {
    const std::string field = absl::StrCat(base, ".resources[", i, "]");
    const YAML::Node rule = resources[i];
    GPUOP_RETURN_IF_ERROR(r.OnlyKeys(rule, field, {"name", "replicas", "devices", "rename"}));
    TimeSlicingRule out;
    if (!rule["name"]) return r.Error(field + ".name", "required");
    GPUOP_ASSIGN_OR_RETURN(out.resource, r.String(rule["name"], field + ".name"));
    if (!IsExtendedResourceName(out.resource)) {
      return r.Error(field + ".name",
                     absl::StrCat("\"", out.resource, "\" is not an extended resource name"));
    }
    if (!rule["replicas"]) return r.Error(field + ".replicas", "required");
    GPUOP_ASSIGN_OR_RETURN(out.replicas, r.Int(rule["replicas"], field + ".replicas"));
    if (out.replicas < 1) return r.Error(field + ".replicas", "must be >= 1");
    if (out.replicas > 1024) return r.Error(field + ".replicas", "must be <= 1024");
    if (rule["rename"]) {
      GPUOP_ASSIGN_OR_RETURN(bool rename, r.Bool(rule["rename"], field + ".rename"));
      out.rename = rename;
    }
    if (const YAML::Node devices = rule["devices"]) {
      if (!devices.IsSequence()) return r.Error(field + ".devices", "must be a list");
      for (size_t d = 0; d < devices.size(); ++d) {
        const std::string dfield = absl::StrCat(field, ".devices[", d, "]");
        GPUOP_ASSIGN_OR_RETURN(std::string id, r.String(devices[d], dfield));
        if (!seen_devices.emplace(out.resource, id).second) {
          return r.Error(dfield, absl::StrCat("\"", id, "\" is already shared by another rule"));
        }
        out.devices.push_back(std::move(id));
      }
    }
    if (out.devices.empty() && !whole_resource_rules.insert(out.resource).second) {
      return r.Error(field + ".devices",
                     absl::StrCat("a second rule for every GPU of ", out.resource,
                                  "; name devices to give GPUs different replica counts"));
    }
    config.time_slicing.push_back(std::move(out));
  }
  return config;
}

}  // namespace

std::string MigStrategyName(MigStrategy strategy) {
  switch (strategy) {
    case MigStrategy::kNone:
      return "none";
    case MigStrategy::kSingle:
      return "single";
    case MigStrategy::kMixed:
      return "mixed";
  }
  return "none";
}

absl::StatusOr<DevicePluginConfig> ParseDevicePluginConfig(absl::string_view yaml,
                                                           absl::string_view source) {
  Reader reader(source);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
    return Parse(root, reader);
  } catch (const YAML::Exception& e) {
    return reader.Error(absl::StrCat("line ", e.mark.line + 1), e.msg);
  }
}

}  // namespace gpuop::agent
