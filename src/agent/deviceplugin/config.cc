#include "agent/deviceplugin/config.h"

#include <algorithm>

#include <yaml-cpp/yaml.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/deviceplugin/config_parse.h"
#include "common/status_macros.h"
#include "common/yaml_fields.h"

namespace gpuop::agent {
namespace {

using common::YamlFields;
using config_parse::Present;

// A DNS-1123 subdomain: lower-case alphanumerics, '-' and '.', alphanumeric at both ends.
bool IsDnsSubdomain(absl::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  auto alnum = [](char c) { return absl::ascii_islower(c) || absl::ascii_isdigit(c); };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alnum(c) || c == '-' || c == '.'; });
}

// Records a key gpuop takes but has no use for, so the plugin can warn by name.
void NotActedOn(DevicePluginConfig& config, absl::string_view field, absl::string_view why) {
  config.not_acted_on.push_back(absl::StrCat(field, ": ", why));
}

absl::StatusOr<MigStrategy> ParseMigStrategy(const std::string& s, const YamlFields& r,
                                             absl::string_view field) {
  if (s == "none") return MigStrategy::kNone;
  if (s == "single") return MigStrategy::kSingle;
  if (s == "mixed") return MigStrategy::kMixed;
  return r.Error(field, absl::StrCat("\"", s, "\": must be none, single or mixed"));
}

// One string or a list of them, as NVIDIA's deviceListStrategy flag takes.
absl::Status ParseDeviceListStrategy(const YAML::Node& node, const YamlFields& r,
                                     const std::string& field, DevicePluginConfig& config) {
  std::vector<std::string> names;
  if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      GPUOP_ASSIGN_OR_RETURN(std::string s, r.String(node[i], absl::StrCat(field, "[", i, "]")));
      names.push_back(std::move(s));
    }
  } else {
    GPUOP_ASSIGN_OR_RETURN(std::string s, r.String(node, field));
    names.push_back(std::move(s));
  }
  if (names.empty()) return r.Error(field, "must name at least one strategy");
  DeviceListStrategies out;
  auto add = [&](DeviceListStrategy s) {
    if (std::find(out.list.begin(), out.list.end(), s) == out.list.end()) out.list.push_back(s);
  };
  for (const std::string& s : names) {
    if (s == "envvar") {
      add(DeviceListStrategy::kEnvVar);
    } else if (s == "volume-mounts") {
      add(DeviceListStrategy::kVolumeMounts);
    } else if (s == "cdi-annotations") {
      add(DeviceListStrategy::kCdiAnnotations);
    } else if (s == "cdi-cri") {
      add(DeviceListStrategy::kCdiCri);
    } else if (s == "cdi") {
      add(DeviceListStrategy::kCdiCri);
      add(DeviceListStrategy::kCdiAnnotations);
    } else if (s == "both") {
      add(DeviceListStrategy::kCdiCri);
      add(DeviceListStrategy::kCdiAnnotations);
      add(DeviceListStrategy::kEnvVar);
      out.cdi_fallback = true;
    } else {
      return r.Error(field, absl::StrCat("\"", s,
                                         "\": must be envvar, volume-mounts, cdi-annotations or "
                                         "cdi-cri (gpuop also takes cdi and both)"));
    }
  }
  config.device_list = std::move(out);
  return absl::OkStatus();
}

absl::Status ParsePluginFlags(const YAML::Node& plugin, const YamlFields& r,
                              DevicePluginConfig& config) {
  const std::string base = "flags.plugin";
  GPUOP_RETURN_IF_ERROR(r.OnlyKeys(
      plugin, base,
      {"passDeviceSpecs", "deviceListStrategy", "deviceIDStrategy", "cdiAnnotationPrefix",
       "nvidiaCTKPath", "containerDriverRoot", "kubeletSocket", "cdiFeatureFlags"}));
  if (Present(plugin["passDeviceSpecs"])) {
    GPUOP_ASSIGN_OR_RETURN(config.pass_device_specs,
                           r.Bool(plugin["passDeviceSpecs"], base + ".passDeviceSpecs"));
  }
  if (Present(plugin["deviceListStrategy"])) {
    GPUOP_RETURN_IF_ERROR(ParseDeviceListStrategy(plugin["deviceListStrategy"], r,
                                                  base + ".deviceListStrategy", config));
  }
  if (Present(plugin["deviceIDStrategy"])) {
    const std::string field = base + ".deviceIDStrategy";
    GPUOP_ASSIGN_OR_RETURN(std::string s, r.String(plugin["deviceIDStrategy"], field));
    if (s == "uuid") {
      config.device_id_strategy = DeviceIdStrategy::kUuid;
    } else if (s == "index") {
      config.device_id_strategy = DeviceIdStrategy::kIndex;
    } else {
      return r.Error(field, absl::StrCat("\"", s, "\": must be uuid or index"));
    }
  }
  if (Present(plugin["cdiAnnotationPrefix"])) {
    const std::string field = base + ".cdiAnnotationPrefix";
    GPUOP_ASSIGN_OR_RETURN(std::string s, r.String(plugin["cdiAnnotationPrefix"], field));
    // An annotation key prefix: a DNS subdomain and '/'.
    if (!absl::EndsWith(s, "/") || !IsDnsSubdomain(s.substr(0, s.size() - 1))) {
      return r.Error(field, absl::StrCat("\"", s, "\": must be a DNS subdomain followed by '/'"));
    }
    config.cdi_annotation_prefix = std::move(s);
  }
  for (const char* key :
       {"nvidiaCTKPath", "containerDriverRoot", "kubeletSocket", "cdiFeatureFlags"}) {
    if (!Present(plugin[key])) continue;
    const std::string field = absl::StrCat(base, ".", key);
    GPUOP_RETURN_IF_ERROR(r.String(plugin[key], field).status());
    NotActedOn(config, field,
               absl::string_view(key) == "kubeletSocket"
                   ? "the operator sets the kubelet's device plugin directory"
                   : "gpuop's CDI component writes the spec and installs its own hook, and finds "
                     "the driver under the host root itself");
  }
  return absl::OkStatus();
}

absl::StatusOr<absl::Duration> ParseGoDuration(const YAML::Node& node, const YamlFields& r,
                                               const std::string& field) {
  if (!node.IsScalar()) return r.Error(field, "must be a duration such as 60s");
  int64_t nanos = 0;
  if (YAML::convert<int64_t>::decode(node, nanos)) return absl::Nanoseconds(nanos);
  absl::Duration d;
  if (!absl::ParseDuration(node.Scalar(), &d) || d <= absl::ZeroDuration()) {
    return r.Error(field, absl::StrCat("\"", node.Scalar(), "\": must be a duration such as 60s"));
  }
  return d;
}

absl::Status ParseGfdFlags(const YAML::Node& gfd, const YamlFields& r, DevicePluginConfig& config) {
  const std::string base = "flags.gfd";
  GPUOP_RETURN_IF_ERROR(r.OnlyKeys(
      gfd, base, {"oneshot", "noTimestamp", "sleepInterval", "outputFile", "machineTypeFile"}));
  if (Present(gfd["oneshot"])) {
    GPUOP_ASSIGN_OR_RETURN(config.gfd.oneshot, r.Bool(gfd["oneshot"], base + ".oneshot"));
  }
  if (Present(gfd["noTimestamp"])) {
    GPUOP_ASSIGN_OR_RETURN(config.gfd.no_timestamp,
                           r.Bool(gfd["noTimestamp"], base + ".noTimestamp"));
  }
  if (Present(gfd["sleepInterval"])) {
    GPUOP_ASSIGN_OR_RETURN(config.gfd.sleep_interval,
                           ParseGoDuration(gfd["sleepInterval"], r, base + ".sleepInterval"));
  }
  if (Present(gfd["outputFile"])) {
    GPUOP_ASSIGN_OR_RETURN(config.gfd.output_file,
                           r.String(gfd["outputFile"], base + ".outputFile"));
  }
  if (Present(gfd["machineTypeFile"])) {
    GPUOP_ASSIGN_OR_RETURN(config.gfd.machine_type_file,
                           r.String(gfd["machineTypeFile"], base + ".machineTypeFile"));
  }
  if (config.gfd.oneshot) {
    NotActedOn(config, base + ".oneshot", "gpuop's labels component keeps the labels current");
  }
  if (!config.gfd.output_file.empty()) {
    NotActedOn(config, base + ".outputFile",
               "gpuop's labels component writes the Node's labels through the API, not a file "
               "for NFD");
  }
  return absl::OkStatus();
}

absl::Status ParseFlags(const YAML::Node& flags, const YamlFields& r, DevicePluginConfig& config) {
  GPUOP_RETURN_IF_ERROR(r.OnlyKeys(
      flags, "flags",
      {"migStrategy", "failOnInitError", "restartOnDeviceUnhealthy", "mpsRoot", "nvidiaDriverRoot",
       "nvidiaDevRoot", "gdrcopyEnabled", "gdsEnabled", "mofedEnabled", "useNodeFeatureAPI",
       "deviceDiscoveryStrategy", "plugin", "gfd", "deviceListStrategy"}));
  if (Present(flags["migStrategy"])) {
    GPUOP_ASSIGN_OR_RETURN(std::string s, r.String(flags["migStrategy"], "flags.migStrategy"));
    GPUOP_ASSIGN_OR_RETURN(config.mig_strategy, ParseMigStrategy(s, r, "flags.migStrategy"));
  }
  if (Present(flags["failOnInitError"])) {
    GPUOP_ASSIGN_OR_RETURN(config.fail_on_init_error,
                           r.Bool(flags["failOnInitError"], "flags.failOnInitError"));
  }
  for (auto [key, out] : {std::pair{"nvidiaDriverRoot", &config.nvidia_driver_root},
                          std::pair{"nvidiaDevRoot", &config.nvidia_dev_root}}) {
    if (!Present(flags[key])) continue;
    const std::string field = absl::StrCat("flags.", key);
    GPUOP_ASSIGN_OR_RETURN(*out, r.String(flags[key], field));
    if (!absl::StartsWith(*out, "/")) return r.Error(field, "must be an absolute path");
  }
  for (auto [key, out] : {std::pair{"gdsEnabled", &config.gds_enabled},
                          std::pair{"mofedEnabled", &config.mofed_enabled},
                          std::pair{"gdrcopyEnabled", &config.gdrcopy_enabled}}) {
    if (!Present(flags[key])) continue;
    GPUOP_ASSIGN_OR_RETURN(*out, r.Bool(flags[key], absl::StrCat("flags.", key)));
  }
  if (Present(flags["restartOnDeviceUnhealthy"])) {
    GPUOP_ASSIGN_OR_RETURN(
        bool restart, r.Bool(flags["restartOnDeviceUnhealthy"], "flags.restartOnDeviceUnhealthy"));
    if (restart) {
      NotActedOn(config, "flags.restartOnDeviceUnhealthy",
                 "gpuop's plugin reports the device Unhealthy and keeps serving; remediation acts "
                 "on the node");
    }
  }
  if (Present(flags["useNodeFeatureAPI"])) {
    GPUOP_ASSIGN_OR_RETURN(bool nfd, r.Bool(flags["useNodeFeatureAPI"], "flags.useNodeFeatureAPI"));
    if (nfd) {
      NotActedOn(config, "flags.useNodeFeatureAPI",
                 "gpuop's labels component writes the Node's labels itself");
    }
  }
  if (Present(flags["deviceDiscoveryStrategy"])) {
    GPUOP_ASSIGN_OR_RETURN(
        std::string s, r.String(flags["deviceDiscoveryStrategy"], "flags.deviceDiscoveryStrategy"));
    if (s != "auto" && s != "nvml" && s != "tegra") {
      return r.Error("flags.deviceDiscoveryStrategy",
                     absl::StrCat("\"", s, "\": must be auto, nvml or tegra"));
    }
    if (s == "tegra") {
      NotActedOn(config, "flags.deviceDiscoveryStrategy",
                 "gpuop discovers GPUs through NVML (and amdgpu's sysfs) only");
    }
  }
  if (Present(flags["mpsRoot"])) {
    GPUOP_ASSIGN_OR_RETURN(config.mps_root, r.String(flags["mpsRoot"], "flags.mpsRoot"));
    if (!absl::StartsWith(config.mps_root, "/")) {
      return r.Error("flags.mpsRoot", "must be an absolute path");
    }
  }
  if (Present(flags["deviceListStrategy"])) {  // gpuop's older spelling
    GPUOP_RETURN_IF_ERROR(ParseDeviceListStrategy(flags["deviceListStrategy"], r,
                                                  "flags.deviceListStrategy", config));
  }
  if (Present(flags["plugin"])) GPUOP_RETURN_IF_ERROR(ParsePluginFlags(flags["plugin"], r, config));
  if (Present(flags["gfd"])) GPUOP_RETURN_IF_ERROR(ParseGfdFlags(flags["gfd"], r, config));
  return absl::OkStatus();
}

absl::StatusOr<DevicePluginConfig> Parse(const YAML::Node& root, const YamlFields& r) {
  DevicePluginConfig config;
  if (!Present(root)) return config;
  GPUOP_RETURN_IF_ERROR(r.OnlyKeys(root, "", {"version", "flags", "resources", "sharing", "imex"}));
  if (Present(root["version"])) {
    GPUOP_ASSIGN_OR_RETURN(std::string version, r.String(root["version"], "version"));
    if (version != "v1") return r.Error("version", absl::StrCat("\"", version, "\" is not v1"));
  }
  if (Present(root["flags"])) GPUOP_RETURN_IF_ERROR(ParseFlags(root["flags"], r, config));
  if (Present(root["resources"])) {
    GPUOP_RETURN_IF_ERROR(config_parse::ParseResources(root["resources"], r, config));
  }
  if (Present(root["sharing"])) {
    GPUOP_RETURN_IF_ERROR(config_parse::ParseSharing(root["sharing"], r, config));
  }
  if (Present(root["imex"]))
    GPUOP_RETURN_IF_ERROR(config_parse::ParseImex(root["imex"], r, config));
  return config;
}

}  // namespace

std::vector<DeviceListStrategy> DeviceListStrategies::Strategies() const {
  return list.empty()
             ? std::vector{DeviceListStrategy::kCdiCri, DeviceListStrategy::kCdiAnnotations}
             : list;
}

bool DeviceListStrategies::Includes(DeviceListStrategy s) const {
  const std::vector<DeviceListStrategy> all = Strategies();
  return std::find(all.begin(), all.end(), s) != all.end();
}

bool DeviceListStrategies::AnyCdi() const {
  return Includes(DeviceListStrategy::kCdiCri) || Includes(DeviceListStrategy::kCdiAnnotations);
}

bool DeviceListStrategies::AllCdi() const {
  const std::vector<DeviceListStrategy> all = Strategies();
  return std::all_of(all.begin(), all.end(), [](DeviceListStrategy s) {
    return s == DeviceListStrategy::kCdiCri || s == DeviceListStrategy::kCdiAnnotations;
  });
}

std::string DevicePluginConfig::SharedName(const SharingRule& rule) const {
  if (!rule.rename.empty()) return rule.rename;
  return rename_by_default ? rule.resource + ".shared" : rule.resource;
}

int MpsMaxClients(int compute_major, int compute_minor) {
  return compute_major > 7 || (compute_major == 7 && compute_minor >= 5) ? kMpsMaxClients : 16;
}

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

absl::StatusOr<std::string> QualifiedResourceName(absl::string_view name) {
  std::string full =
      absl::StrContains(name, '/') ? std::string(name) : absl::StrCat("nvidia.com/", name);
  if (full.size() > 63) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", full, "\": a resource name is at most 63 characters"));
  }
  const size_t slash = full.find('/');
  const absl::string_view domain = absl::string_view(full).substr(0, slash);
  const absl::string_view rest = absl::string_view(full).substr(slash + 1);
  if (!IsDnsSubdomain(domain) || !IsDnsSubdomain(rest) || absl::EndsWith(domain, "kubernetes.io") ||
      domain == "k8s.io" || domain.find('.') == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", full, "\" is not an extended resource name (<domain>/<name>, lower case)"));
  }
  return full;
}

absl::StatusOr<DevicePluginConfig> ParseDevicePluginConfig(absl::string_view yaml,
                                                           absl::string_view source) {
  YamlFields reader(absl::StrCat("config ", source));
  try {
    return Parse(YAML::Load(std::string(yaml)), reader);
  } catch (const YAML::Exception& e) {
    return reader.Error(absl::StrCat("line ", e.mark.line + 1), e.msg);
  }
}

}  // namespace gpuop::agent
