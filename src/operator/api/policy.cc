#include "operator/api/policy.h"

#include <algorithm>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "operator/api/reader.h"

namespace gpuop::op {

int64_t IntOrPercent::Resolve(int64_t total) const {
  if (!percent) return value;
  return (value * total + 99) / 100;
}

const char* ComponentName(Component c) {
  switch (c) {
    case Component::kDiscovery:
      return "discovery";
    case Component::kDriver:
      return "driver";
    case Component::kRuntime:
      return "runtime";
    case Component::kCdi:
      return "cdi";
    case Component::kLabels:
      return "labels";
    case Component::kDevicePlugin:
      return "device-plugin";
    case Component::kHealth:
      return "health";
    case Component::kExporter:
      return "exporter";
    case Component::kValidator:
      return "validator";
    case Component::kMigManager:
      return "mig-manager";
    case Component::kPowerManager:
      return "power-manager";
    case Component::kMpsDaemon:
      return "mps-daemon";
  }
  return "unknown";
}

const char* RemediationStepName(RemediationStep step) {
  switch (step) {
    case RemediationStep::kTaint:
      return "Taint";
    case RemediationStep::kDrain:
      return "Drain";
    case RemediationStep::kRestartDriver:
      return "RestartDriver";
    case RemediationStep::kRequestReboot:
      return "RequestReboot";
    case RemediationStep::kValidate:
      return "Validate";
    case RemediationStep::kUntaint:
      return "Untaint";
  }
  return "Unknown";
}

bool PolicySpec::Enabled(Component c) const {
  switch (c) {
    case Component::kDiscovery:
      return components.discovery;
    case Component::kDriver:
      return driver.enabled;
    case Component::kRuntime:
      return components.runtime;
    case Component::kCdi:
      return components.cdi;
    case Component::kLabels:
      return components.labels;
    case Component::kDevicePlugin:
      return components.device_plugin;
    case Component::kHealth:
      return components.health;
    case Component::kExporter:
      return components.exporter;
    case Component::kValidator:
      return components.validator;
    case Component::kMigManager:
      return components.mig_manager;
    case Component::kPowerManager:
      return components.power_manager;
    case Component::kMpsDaemon:
      return components.device_plugin;
  }
  return false;
}

absl::StatusOr<absl::Duration> ParseDurationField(const nlohmann::json& value,
                                                  const std::string& field) {
  absl::Duration d;
  if (!value.is_string() || !absl::ParseDuration(value.get<std::string>(), &d) ||
      d < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": must be a duration such as '90s', '10m' or '1h30m', not ", value.dump()));
  }
  return d;
}

namespace {

// What the CRD's patterns accept (deploy/helm/gpuop/crds/gpuop.io_gpuclusterpolicies.yaml),
// checked by hand so that the time is linear in the input; crds_test checks that the CRD's
// patterns and these agree.

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlnum(char c) { return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// A DNS name or IPv4 address (dot-separated labels of 1 to 63 letters, digits and inner '-'),
// or an IPv6 address without brackets (hex digits, ':' and '.', two ':' at least).
bool IsHost(absl::string_view host) {
  if (host.empty() || host.size() > 253) return false;
  if (absl::StrContains(host, ':')) {
    // Every IPv6 address has two colons at least; one is a port ("10.0.0.1:6443").
    if (std::count(host.begin(), host.end(), ':') < 2) return false;
    for (char c : host) {
      if (!IsHex(c) && c != ':' && c != '.') return false;
    }
    return true;
  }
  for (absl::string_view label : absl::StrSplit(host, '.')) {
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') {
      return false;
    }
    for (char c : label) {
      if (!IsAlnum(c) && c != '-') return false;
    }
  }
  return true;
}

// An image name without tag or digest: lower-case letters, digits, '.', '_', '-', '/', starting
// and ending with a letter or digit.
bool IsImageName(absl::string_view name) {
  auto edge = [](char c) { return IsDigit(c) || (c >= 'a' && c <= 'z'); };
  if (name.empty() || !edge(name.front()) || !edge(name.back())) return false;
  for (char c : name) {
    if (!edge(c) && c != '.' && c != '_' && c != '-' && c != '/') return false;
  }
  return true;
}

// An environment variable name: letters, digits, '_', '-', '.', not starting with a digit.
bool IsEnvName(absl::string_view name) {
  if (name.empty() || IsDigit(name.front())) return false;
  for (char c : name) {
    if (!IsAlnum(c) && c != '_' && c != '-' && c != '.') return false;
  }
  return true;
}

// Consumes a decimal number ("12", "1.5", "1.", ".5") from the front of `s`.
bool ConsumeDecimal(absl::string_view& s) {
  size_t i = 0;
  while (i < s.size() && IsDigit(s[i])) ++i;
  const bool whole = i > 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    const size_t fraction = i;
    while (i < s.size() && IsDigit(s[i])) ++i;
    if (!whole && i == fraction) return false;
  } else if (!whole) {
    return false;
  }
  s.remove_prefix(i);
  return true;
}

// A non-negative resource quantity as a string: a decimal number, then optionally a binary
// suffix (Ki..Ei), a decimal one (n, u, m, k, M, G, T, P, E) or an exponent (e3, E-2).
bool IsQuantity(absl::string_view s) {
  if (!ConsumeDecimal(s)) return false;
  if (s.empty()) return true;
  if (s.size() == 2 && s[1] == 'i' && absl::StrContains("KMGTPE", s[0])) return true;
  if (s.size() == 1 && absl::StrContains("numkMGTPE", s[0])) return true;
  if (s[0] != 'e' && s[0] != 'E') return false;
  s.remove_prefix(1);
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
  return ConsumeDecimal(s) && s.empty();
}

absl::Status ReadEnv(const Reader& r, const char* key, std::vector<EnvVar>& out) {
  const nlohmann::json& v = r.Get(key);
  if (v.is_null()) return absl::OkStatus();
  if (!v.is_array()) return r.Error(key, "must be a list of {name, value}");
  std::vector<EnvVar> env;
  std::set<std::string> names;
  for (size_t i = 0; i < v.size(); ++i) {
    const Reader item(v[i], r.Path(absl::StrCat(key, "[", i, "]")));
    if (!v[i].is_object()) return r.Error(absl::StrCat(key, "[", i, "]"), "must be {name, value}");
    EnvVar var;
    GPUOP_RETURN_IF_ERROR(item.String("name", var.name));
    GPUOP_RETURN_IF_ERROR(item.String("value", var.value));
    if (!IsEnvName(var.name)) {
      return item.Error("name",
                        "must be an environment variable name: letters, digits, '_', '-' or '.', "
                        "not starting with a digit");
    }
    if (!names.insert(var.name).second) {
      return item.Error("name", absl::StrCat("\"", var.name, "\" is set twice"));
    }
    env.push_back(std::move(var));
  }
  out = std::move(env);
  return absl::OkStatus();
}

// The CRD's maxProperties for driver.resources.requests and .limits (which bounds the cost of
// their validation rules).
constexpr size_t kMaxResources = 16;

absl::Status ReadResourceList(const Reader& r, const char* key,
                              std::map<std::string, std::string>& out) {
  const nlohmann::json& v = r.Get(key);
  if (v.is_null()) return absl::OkStatus();
  if (!v.is_object()) return r.Error(key, "must be a map of resource names to quantities");
  if (v.size() > kMaxResources) {
    return r.Error(key, absl::StrCat("must name ", kMaxResources, " resources at most"));
  }
  for (const auto& [name, quantity] : v.items()) {
    std::string text;
    if (quantity.is_number_integer() && quantity.get<int64_t>() >= 0) {
      text = absl::StrCat(quantity.get<int64_t>());
    } else if (quantity.is_string() && IsQuantity(quantity.get<std::string>())) {
      text = quantity.get<std::string>();
    } else {
      return r.Error(absl::StrCat(key, ".", name),
                     "must be a quantity such as 2, '500m', '4Gi' (0 or more)");
    }
    out[name] = text;
  }
  return absl::OkStatus();
}

absl::Status ReadDriver(const Reader& r, DriverSpec& d) {
  GPUOP_RETURN_IF_ERROR(r.Bool("enabled", d.enabled));
  GPUOP_RETURN_IF_ERROR(r.String("repository", d.repository));
  GPUOP_RETURN_IF_ERROR(r.String("image", d.image));
  if (!IsImageName(d.image)) {
    return r.Error("image",
                   "must be an image name without tag or digest (lower case, digits, '.', '_', "
                   "'-', '/'), such as 'driver'");
  }
  GPUOP_RETURN_IF_ERROR(r.String("version", d.version));
  GPUOP_RETURN_IF_ERROR(r.Bool("usePrecompiled", d.use_precompiled));
  GPUOP_RETURN_IF_ERROR(r.String("kernelModuleType", d.kernel_module_type));
  GPUOP_RETURN_IF_ERROR(r.String("osTag", d.os_tag));
  if (d.enabled && d.version.empty()) {
    return r.Error("version", "is required while the driver is enabled (for example '570.86.15')");
  }
  GPUOP_RETURN_IF_ERROR(ReadEnv(r, "env", d.env));
  GPUOP_RETURN_IF_ERROR(r.StringList("args", d.args));
  if (const nlohmann::json& v = r.Get("resources"); !v.is_null()) {
    if (!v.is_object()) return r.Error("resources", "must be an object with requests and limits");
    const Reader resources = r.Child("resources");
    ResourceRequirements req;
    GPUOP_RETURN_IF_ERROR(ReadResourceList(resources, "requests", req.requests));
    GPUOP_RETURN_IF_ERROR(ReadResourceList(resources, "limits", req.limits));
    d.resources = std::move(req);
  }
  return absl::OkStatus();
}

absl::Status ReadApiServer(const Reader& spec, std::optional<ApiServerSpec>& out) {
  const nlohmann::json& v = spec.Get("apiServer");
  if (v.is_null()) return absl::OkStatus();
  if (!v.is_object()) return spec.Error("apiServer", "must be an object with host and port");
  const Reader r = spec.Child("apiServer");
  ApiServerSpec a;
  GPUOP_RETURN_IF_ERROR(r.String("host", a.host));
  if (a.host.empty())
    return r.Error("host", "is required (the API server's address, such as 127.0.0.1)");
  if (!IsHost(a.host)) {
    return r.Error("host", absl::StrCat("\"", a.host,
                                        "\" is not a DNS name, an IPv4 address or an IPv6 address "
                                        "(without brackets, port or scheme)"));
  }
  if (r.Get("port").is_null()) return r.Error("port", "is required (for example 6443)");
  int64_t port = 0;
  GPUOP_RETURN_IF_ERROR(r.Int("port", port, 1, 65535));
  a.port = static_cast<int>(port);
  out = std::move(a);
  return absl::OkStatus();
}

// components.health.xidActions: {"<XID>": "<action>"}, the agent's classes (xid_classes.h).
absl::Status ReadXidActions(const Reader& health, std::map<int64_t, std::string>& out) {
  std::map<std::string, std::string> actions;
  GPUOP_RETURN_IF_ERROR(health.StringMap("xidActions", actions));
  static const std::set<std::string> kActions = {"Ignore", "RestartApp", "ResetGpu", "RebootNode",
                                                 "ContactSupport"};
  for (const auto& [key, action] : actions) {
    const std::string field = absl::StrCat("xidActions.", key);
    int64_t xid = 0;
    if (!absl::SimpleAtoi(key, &xid) || xid < 1 || xid > INT32_MAX) {
      return health.Error(field.c_str(), "the key must be an XID number");
    }
    if (!kActions.contains(action)) {
      return health.Error(field.c_str(),
                          "must be Ignore, RestartApp, ResetGpu, RebootNode or ContactSupport");
    }
    out[xid] = action;
  }
  return absl::OkStatus();
}

absl::Status ReadComponents(const Reader& r, ComponentsSpec& c) {
  GPUOP_RETURN_IF_ERROR(r.Child("discovery").Bool("enabled", c.discovery));
  GPUOP_RETURN_IF_ERROR(r.Child("labels").Bool("enabled", c.labels));
  const Reader runtime = r.Child("runtime");
  GPUOP_RETURN_IF_ERROR(runtime.Bool("enabled", c.runtime));
  GPUOP_RETURN_IF_ERROR(runtime.String("runtime", c.runtime_kind));
  GPUOP_RETURN_IF_ERROR(runtime.Bool("setAsDefault", c.runtime_set_as_default));
  GPUOP_RETURN_IF_ERROR(r.Child("cdi").Bool("enabled", c.cdi));
  const Reader plugin = r.Child("devicePlugin");
  GPUOP_RETURN_IF_ERROR(plugin.Bool("enabled", c.device_plugin));
  GPUOP_RETURN_IF_ERROR(plugin.String("config", c.device_plugin_config));
  GPUOP_RETURN_IF_ERROR(plugin.String("defaultConfig", c.device_plugin_default_config));
  GPUOP_RETURN_IF_ERROR(plugin.String("migStrategy", c.mig_strategy));
  if (c.mig_strategy != "none" && c.mig_strategy != "single" && c.mig_strategy != "mixed") {
    return plugin.Error("migStrategy", "must be none, single or mixed");
  }
  const Reader exporter = r.Child("exporter");
  GPUOP_RETURN_IF_ERROR(exporter.Bool("enabled", c.exporter));
  int64_t port = c.exporter_port;
  GPUOP_RETURN_IF_ERROR(exporter.Int("port", port, 1, 65535));
  c.exporter_port = static_cast<int>(port);
  GPUOP_RETURN_IF_ERROR(exporter.Duration("interval", c.exporter_interval));
  GPUOP_RETURN_IF_ERROR(exporter.Bool("kubernetesVirtualGpus", c.exporter_virtual_gpus));
  const Reader monitor = exporter.Child("serviceMonitor");
  GPUOP_RETURN_IF_ERROR(monitor.Bool("enabled", c.exporter_service_monitor));
  if (!monitor.Get("interval").is_null()) {
    absl::Duration interval;
    GPUOP_RETURN_IF_ERROR(monitor.Duration("interval", interval));
    c.exporter_scrape_interval = interval;
  }
  GPUOP_RETURN_IF_ERROR(monitor.StringMap("additionalLabels", c.exporter_service_monitor_labels));
  const Reader health = r.Child("health");
  GPUOP_RETURN_IF_ERROR(health.Bool("enabled", c.health));
  GPUOP_RETURN_IF_ERROR(health.IntList("ignoredXids", c.ignored_xids, 1, INT32_MAX));
  GPUOP_RETURN_IF_ERROR(ReadXidActions(health, c.xid_actions));
  GPUOP_RETURN_IF_ERROR(r.Child("validator").Bool("enabled", c.validator));
  const Reader mig = r.Child("migManager");
  GPUOP_RETURN_IF_ERROR(mig.Bool("enabled", c.mig_manager));
  GPUOP_RETURN_IF_ERROR(mig.String("config", c.mig_config));
  GPUOP_RETURN_IF_ERROR(mig.Bool("withReboot", c.mig_with_reboot));
  const Reader power = r.Child("powerManager");
  GPUOP_RETURN_IF_ERROR(power.Bool("enabled", c.power_manager));
  GPUOP_RETURN_IF_ERROR(power.Duration("idleAfter", c.power_idle_after));
  int64_t floor = c.power_floor_percent;
  GPUOP_RETURN_IF_ERROR(power.Int("floorPercent", floor, 1, 100));
  c.power_floor_percent = static_cast<int>(floor);
  return absl::OkStatus();
}

absl::Status ReadIntOrPercent(const Reader& r, const char* key, IntOrPercent& out) {
  const nlohmann::json& v = r.Get(key);
  if (v.is_null()) return absl::OkStatus();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) {
    out = {.value = v.get<int64_t>(), .percent = false};
    return absl::OkStatus();
  }
  int64_t pct = 0;
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s.size() >= 2 && s.back() == '%' && absl::SimpleAtoi(s.substr(0, s.size() - 1), &pct) &&
        pct >= 0 && pct <= 100) {
      out = {.value = pct, .percent = true};
      return absl::OkStatus();
    }
  }
  return r.Error(key, "must be a count of nodes (0 or more) or a percentage from 0% to 100%");
}

absl::Status ReadUpgrade(const Reader& r, UpgradeSpec& u) {
  GPUOP_RETURN_IF_ERROR(r.Bool("autoUpgrade", u.auto_upgrade));
  GPUOP_RETURN_IF_ERROR(r.Int("maxParallel", u.max_parallel, 0, INT32_MAX));
  GPUOP_RETURN_IF_ERROR(ReadIntOrPercent(r, "maxUnavailable", u.max_unavailable));
  const Reader jobs = r.Child("waitForJobs");
  GPUOP_RETURN_IF_ERROR(jobs.String("podSelector", u.wait_for_jobs_selector));
  GPUOP_RETURN_IF_ERROR(jobs.Duration("timeout", u.wait_for_jobs_timeout));
  const Reader deletion = r.Child("podDeletion");
  GPUOP_RETURN_IF_ERROR(deletion.Bool("force", u.pod_deletion_force));
  GPUOP_RETURN_IF_ERROR(deletion.Bool("deleteEmptyDir", u.pod_deletion_delete_empty_dir));
  GPUOP_RETURN_IF_ERROR(deletion.Duration("timeout", u.pod_deletion_timeout));
  const Reader drain = r.Child("drain");
  GPUOP_RETURN_IF_ERROR(drain.Bool("enabled", u.drain_enabled));
  GPUOP_RETURN_IF_ERROR(drain.Bool("force", u.drain_force));
  GPUOP_RETURN_IF_ERROR(drain.Bool("deleteEmptyDir", u.drain_delete_empty_dir));
  GPUOP_RETURN_IF_ERROR(drain.String("podSelector", u.drain_selector));
  GPUOP_RETURN_IF_ERROR(drain.Duration("timeout", u.drain_timeout));
  GPUOP_RETURN_IF_ERROR(r.Duration("podRestartTimeout", u.pod_restart_timeout));
  GPUOP_RETURN_IF_ERROR(r.Duration("validationTimeout", u.validation_timeout));
  return absl::OkStatus();
}

absl::Status ReadRemediation(const Reader& r, RemediationSpec& m) {
  GPUOP_RETURN_IF_ERROR(r.Bool("enabled", m.enabled));
  const nlohmann::json& steps = r.Get("steps");
  if (!steps.is_null()) {
    if (!steps.is_array() || steps.empty()) return r.Error("steps", "must be a non-empty list");
    m.steps.clear();
    for (size_t i = 0; i < steps.size(); ++i) {
      bool known = false;
      for (RemediationStep s : {RemediationStep::kTaint, RemediationStep::kDrain,
                                RemediationStep::kRestartDriver, RemediationStep::kRequestReboot,
                                RemediationStep::kValidate, RemediationStep::kUntaint}) {
        if (steps[i].is_string() && steps[i].get<std::string>() == RemediationStepName(s)) {
          m.steps.push_back(s);
          known = true;
        }
      }
      if (!known) {
        return r.Error(absl::StrCat("steps[", i, "]"),
                       "must be Taint, Drain, RestartDriver, RequestReboot, Validate or Untaint");
      }
    }
  }
  GPUOP_RETURN_IF_ERROR(r.Int("maxParallel", m.max_parallel, 1, INT32_MAX));
  GPUOP_RETURN_IF_ERROR(r.Int("maxAttempts", m.max_attempts, 1, INT32_MAX));
  GPUOP_RETURN_IF_ERROR(r.Duration("window", m.window));
  GPUOP_RETURN_IF_ERROR(r.Duration("stepTimeout", m.step_timeout));
  GPUOP_RETURN_IF_ERROR(r.String("rebootAnnotation", m.reboot_annotation));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ClusterPolicy> ParseClusterPolicy(const nlohmann::json& object) {
  ClusterPolicy p;
  const Reader root(object, "");
  GPUOP_RETURN_IF_ERROR(root.Child("metadata").String("name", p.name));
  GPUOP_RETURN_IF_ERROR(root.Child("metadata").String("uid", p.uid));
  GPUOP_RETURN_IF_ERROR(root.Child("metadata").Int("generation", p.generation, 0, INT64_MAX));
  const Reader spec = root.Child("spec");
  PolicySpec& s = p.spec;
  GPUOP_RETURN_IF_ERROR(spec.String("image", s.image));
  GPUOP_RETURN_IF_ERROR(spec.String("imagePullPolicy", s.image_pull_policy));
  GPUOP_RETURN_IF_ERROR(spec.StringList("imagePullSecrets", s.image_pull_secrets));
  GPUOP_RETURN_IF_ERROR(spec.StringMap("nodeSelector", s.node_selector));
  if (const nlohmann::json& t = spec.Get("tolerations"); t.is_array()) s.tolerations = t;
  GPUOP_RETURN_IF_ERROR(spec.Bool("hostNetwork", s.host_network));
  GPUOP_RETURN_IF_ERROR(ReadApiServer(spec, s.api_server));
  GPUOP_RETURN_IF_ERROR(ReadDriver(spec.Child("driver"), s.driver));
  GPUOP_RETURN_IF_ERROR(ReadComponents(spec.Child("components"), s.components));
  GPUOP_RETURN_IF_ERROR(ReadUpgrade(spec.Child("upgrade"), s.upgrade));
  GPUOP_RETURN_IF_ERROR(ReadRemediation(spec.Child("remediation"), s.remediation));
  return p;
}

}  // namespace gpuop::op
