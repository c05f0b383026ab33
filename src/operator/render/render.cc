#include "operator/render/render.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "agent/cdi/kinds.h"
#include "operator/nodes/node_labels.h"
#include "operator/nodes/startup_taint.h"
#include "operator/render/component_spec.h"
#include "operator/render/config_maps.h"
#include "operator/render/monitoring.h"

namespace gpuop::op {

namespace {

using Json = nlohmann::json;
using render::ComponentSpec;

constexpr char kNameLabel[] = "app.kubernetes.io/name";
constexpr char kPartOfLabel[] = "app.kubernetes.io/part-of";
constexpr char kNvidiaRuntimeClass[] = "nvidia";
// Where CDI specs are written (the CDI component's output directory).
constexpr char kCdiDir[] = "/var/run/cdi";
// The init container of the components that wait for the driver (ComponentSpec).
const std::vector<std::string> kWaitForDriver = {
    "gpuop-agent", "validate",        "--probe",
    "--wait",      "--checks=driver", "--status-dir=/run/gpuop/validations"};

Json Labels(const std::string& component, const std::string& name) {
  return {{kManagedByLabel, kManagedByValue},
          {kComponentLabel, component},
          {kPartOfLabel, "gpuop"},
          {kNameLabel, name}};
}

Json Meta(const std::string& name, const std::string& ns, const std::string& component) {
  Json meta = {{"name", name}, {"labels", Labels(component, name)}};
  if (!ns.empty()) meta["namespace"] = ns;
  return meta;
}

Json ServiceAccount(const std::string& name, const std::string& ns, const std::string& component,
                    bool token) {
  return {{"apiVersion", "v1"},
          {"kind", "ServiceAccount"},
          {"metadata", Meta(name, ns, component)},
          {"automountServiceAccountToken", token}};
}

Json ClusterRole(const std::string& name, const std::string& component,
                 const std::vector<render::Rule>& rules) {
  Json list = Json::array();
  for (const auto& r : rules) {
    list.push_back({{"apiGroups", r.api_groups}, {"resources", r.resources}, {"verbs", r.verbs}});
  }
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "ClusterRole"},
          {"metadata", Meta(name, "", component)},
          {"rules", list}};
}

Json ClusterRoleBinding(const std::string& name, const std::string& ns,
                        const std::string& component) {
  return {
      {"apiVersion", "rbac.authorization.k8s.io/v1"},
      {"kind", "ClusterRoleBinding"},
      {"metadata", Meta(name, "", component)},
      {"roleRef",
       {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", name}}},
      {"subjects", Json::array({{{"kind", "ServiceAccount"}, {"name", name}, {"namespace", ns}}})}};
}

Json Tolerations(const PolicySpec& policy) {
  Json out = Json::array({
      // GPU nodes are often tainted to keep other work off them.
      {{"key", "nvidia.com/gpu"}, {"operator", "Exists"}},
      {{"key", "amd.com/gpu"}, {"operator", "Exists"}},
      // The health monitor and validator must run on a node under remediation.
      {{"key", "gpuop.io/remediation"}, {"operator", "Exists"}},
      // The GPU stack is what takes the node group's startup taint away (startup_taint.h).
      {{"key", kStartupTaintKey}, {"operator", "Exists"}},
      {{"key", kAutoscalerStartupTaintKey}, {"operator", "Exists"}},
  });
  for (const auto& t : policy.tolerations) out.push_back(t);
  return out;
}

// The driver pod's first step (agent/driver/safe_load.h): with a driver already loaded on the
// node, it waits until the operator has made the node safe. It reads /sys/module (visible in any
// container) and the driver root, and writes one annotation on its Node.
Json SafeLoadInit(const PolicySpec& policy, const Json& env) {
  return {{"name", "safe-load"},
          {"image", policy.image},
          {"imagePullPolicy", policy.image_pull_policy},
          {"command", {"gpuop-agent", "driver-safe-load"}},
          {"env", env},
          {"resources",
           {{"requests", {{"cpu", "10m"}, {"memory", "16Mi"}}}, {"limits", {{"memory", "64Mi"}}}}},
          {"securityContext",
           {{"allowPrivilegeEscalation", false},
            {"readOnlyRootFilesystem", true},
            {"capabilities", {{"drop", Json::array({"ALL"})}}}}},
          {"volumeMounts", Json::array({{{"name", "run-nvidia"},
                                         {"mountPath", "/run/nvidia"},
                                         {"readOnly", true},
                                         {"mountPropagation", "HostToContainer"}}})}};
}

Json DaemonSet(const ComponentSpec& s, const std::string& name, const PolicySpec& policy,
               const std::string& ns) {
  const std::string component = ComponentName(s.component);
  Json node_selector = Json::object();
  if (s.deploy_label) node_selector[absl::StrCat(kDeployLabelPrefix, component)] = "true";
  // Not the driver's: a node leaving the policy's nodeSelector would lose its driver at once.
  // Node labelling admits nodes by it (gpuop.io/deploy.driver), and a driver leaves through the
  // upgrade (gpuop.io/driver-removal).
  if (s.component != Component::kDriver) {
    for (const auto& [k, v] : policy.node_selector) node_selector[k] = v;
  }
  for (const auto& [k, v] : s.extra_node_selector) node_selector[k] = v;

  Json env = Json::array({
      {{"name", "NODE_NAME"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "spec.nodeName"}}}}}},
      {{"name", "POD_NAME"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.name"}}}}}},
  });
  if (policy.api_server.has_value() && !s.rules.empty()) {
    // A container's own variables win over the service variables the kubelet injects, so these
    // point the in-cluster configuration (src/kube/config) at the given address.
    env.push_back({{"name", "KUBERNETES_SERVICE_HOST"}, {"value", policy.api_server->host}});
    env.push_back(
        {{"name", "KUBERNETES_SERVICE_PORT"}, {"value", absl::StrCat(policy.api_server->port)}});
  }
  // What an init container of gpuop's gets: the node, the pod and the API server.
  const Json base_env = env;
  for (const auto& var : s.env) {
    Json entry = {{"name", var.name}, {"value", var.value}};
    auto same =
        std::find_if(env.begin(), env.end(), [&](const Json& e) { return e["name"] == var.name; });
    if (same != env.end()) {
      *same = std::move(entry);
    } else {
      env.push_back(std::move(entry));
    }
  }
  Json volumes = Json::array();
  Json mounts = Json::array();
  for (const auto& m : s.mounts) {
    Json host = {{"path", m.host_path}};
    if (!m.type.empty()) host["type"] = m.type;
    volumes.push_back({{"name", m.name}, {"hostPath", host}});
    Json mount = {{"name", m.name}, {"mountPath", m.mount_path}, {"readOnly", m.read_only}};
    if (m.bidirectional) {
      mount["mountPropagation"] = "Bidirectional";
    } else if (m.host_to_container) {
      mount["mountPropagation"] = "HostToContainer";
    }
    mounts.push_back(std::move(mount));
  }
  for (const auto& [cm, path] : s.config_maps) {
    volumes.push_back({{"name", cm}, {"configMap", {{"name", cm}, {"optional", true}}}});
    mounts.push_back({{"name", cm}, {"mountPath", path}, {"readOnly", true}});
  }
  Json security;
  if (s.privileged) {
    security = {{"privileged", true}};
  } else if (s.gpu_management) {
    // Root with CAP_SYS_ADMIN alone. Kubernetes refuses allowPrivilegeEscalation: false beside
    // an added CAP_SYS_ADMIN, so it is left out.
    security = {
        {"readOnlyRootFilesystem", true},
        {"capabilities", {{"drop", Json::array({"ALL"})}, {"add", Json::array({"SYS_ADMIN"})}}}};
    env.push_back({{"name", agent::cdi::kCdiDevicesVariable},
                   {"value", absl::StrCat(agent::cdi::kManagementAllDevice, ",",
                                          agent::cdi::kManagementMigMonitorDevice)}});
  } else {
    security = {{"allowPrivilegeEscalation", false},
                {"readOnlyRootFilesystem", true},
                {"capabilities", {{"drop", Json::array({"ALL"})}}}};
    if (s.run_as_user.has_value()) {
      security["runAsUser"] = *s.run_as_user;
      security["runAsNonRoot"] = true;
    }
  }
  Json resources = {{"requests", {{"cpu", "10m"}, {"memory", "16Mi"}}}};
  if (!s.memory_limit.empty()) resources["limits"] = {{"memory", s.memory_limit}};
  if (s.resources.has_value()) {
    resources = Json::object();
    if (!s.resources->requests.empty()) resources["requests"] = s.resources->requests;
    if (!s.resources->limits.empty()) resources["limits"] = s.resources->limits;
  }
  Json container = {{"name", component},
                    {"image", s.image},
                    {"imagePullPolicy", policy.image_pull_policy},
                    {"command", s.command},
                    {"env", env},
                    {"resources", resources},
                    {"securityContext", security},
                    {"volumeMounts", mounts}};
  if (!s.args.empty()) container["args"] = s.args;
  if (!s.ports.empty()) container["ports"] = s.ports;
  if (!s.startup_probe.is_null()) container["startupProbe"] = s.startup_probe;
  if (!s.lifecycle.is_null()) container["lifecycle"] = s.lifecycle;
  if (!s.readiness_probe.is_null()) {
    container["readinessProbe"] = s.readiness_probe;
    // With hostNetwork the pod's IP is the node's: the kubelet, on the same host, probes
    // loopback instead, so probes never go to the node's address.
    if (policy.host_network && s.readiness_probe.contains("httpGet")) {
      container["readinessProbe"]["httpGet"]["host"] = "127.0.0.1";
    }
  }

  Json pod_spec = {{"serviceAccountName", name},
                   {"automountServiceAccountToken", !s.rules.empty()},
                   {"priorityClassName", "system-node-critical"},
                   {"tolerations", Tolerations(policy)},
                   {"containers", Json::array({container})},
                   {"volumes", volumes}};
  if (s.gpu_management) pod_spec["runtimeClassName"] = render::kGpuopRuntimeClass;
  if (s.waits_for_driver) {
    const bool has_run_gpuop =
        std::any_of(s.mounts.begin(), s.mounts.end(),
                    [](const render::HostMount& m) { return m.name == "run-gpuop"; });
    if (!has_run_gpuop) {
      pod_spec["volumes"].push_back(
          {{"name", "run-gpuop"},
           {"hostPath", {{"path", "/run/gpuop"}, {"type", "DirectoryOrCreate"}}}});
    }
    pod_spec["initContainers"] = Json::array(
        {{{"name", "wait-for-driver"},
          {"image", policy.image},
          {"imagePullPolicy", policy.image_pull_policy},
          {"command", kWaitForDriver},
          {"resources", resources},
          // It only reads a file: no privilege, whatever the component needs.
          {"securityContext",
           {{"allowPrivilegeEscalation", false},
            {"readOnlyRootFilesystem", true},
            {"capabilities", {{"drop", Json::array({"ALL"})}}}}},
          {"volumeMounts",
           Json::array(
               {{{"name", "run-gpuop"}, {"mountPath", "/run/gpuop"}, {"readOnly", true}}})}}});
    if (s.gpu_management) {
      // And for the management spec its devices come from, so that the container is created
      // once they can be given to it.
      Json& init = pod_spec["initContainers"][0];
      init["command"].push_back(
          absl::StrCat("--wait-file=", kCdiDir, "/", agent::cdi::kManagementSpecFileName));
      init["volumeMounts"].push_back(
          {{"name", "cdi-specs"}, {"mountPath", kCdiDir}, {"readOnly", true}});
      const bool has_cdi = std::any_of(s.mounts.begin(), s.mounts.end(),
                                       [](const render::HostMount& m) { return m.name == "cdi"; });
      if (!has_cdi) {
        pod_spec["volumes"].push_back(
            {{"name", "cdi-specs"},
             {"hostPath", {{"path", kCdiDir}, {"type", "DirectoryOrCreate"}}}});
      }
    }
  }
  if (s.safe_load) {
    if (!pod_spec.contains("initContainers")) pod_spec["initContainers"] = Json::array();
    pod_spec["initContainers"].push_back(SafeLoadInit(policy, base_env));
  }
  if (!node_selector.empty()) pod_spec["nodeSelector"] = node_selector;
  if (!s.affinity.is_null()) pod_spec["affinity"] = s.affinity;
  if (s.host_pid) pod_spec["hostPID"] = true;
  if (policy.host_network) {
    pod_spec["hostNetwork"] = true;
    // Cluster DNS still resolves for the components (the default would be the node's).
    pod_spec["dnsPolicy"] = "ClusterFirstWithHostNet";
  }
  if (!policy.image_pull_secrets.empty()) {
    Json secrets = Json::array();
    for (const auto& secret : policy.image_pull_secrets) secrets.push_back({{"name", secret}});
    pod_spec["imagePullSecrets"] = secrets;
  }
  Json strategy =
      s.on_delete ? Json{{"type", "OnDelete"}}
                  : Json{{"type", "RollingUpdate"}, {"rollingUpdate", {{"maxUnavailable", "10%"}}}};
  return {
      {"apiVersion", "apps/v1"},
      {"kind", "DaemonSet"},
      {"metadata", Meta(name, ns, component)},
      {"spec",
       {{"selector", {{"matchLabels", {{kNameLabel, name}}}}},
        {"updateStrategy", strategy},
        {"template", {{"metadata", {{"labels", Labels(component, name)}}}, {"spec", pod_spec}}}}}};
}

// The ServiceAccount, RBAC and DaemonSet of one component's spec.
void AddComponent(const ComponentSpec& s, const std::string& name, const RenderInput& in,
                  std::vector<Json>& accounts, std::vector<Json>& rbac,
                  std::vector<Json>& daemon_sets) {
  const std::string component = ComponentName(s.component);
  accounts.push_back(ServiceAccount(name, in.ns, component, !s.rules.empty()));
  if (!s.rules.empty()) {
    rbac.push_back(ClusterRole(name, component, s.rules));
    rbac.push_back(ClusterRoleBinding(name, in.ns, component));
  }
  daemon_sets.push_back(DaemonSet(s, name, in.policy, in.ns));
}

}  // namespace

std::string DriverDaemonSetName(const std::string& pool, const std::string& os) {
  std::string name = pool.empty() ? "gpuop-driver" : absl::StrCat("gpuop-driver-", pool);
  if (!os.empty()) absl::StrAppend(&name, "-", os);
  name = absl::AsciiStrToLower(name);
  std::replace(name.begin(), name.end(), '_', '-');
  constexpr size_t kMax = 63;  // the name is also its pods' app.kubernetes.io/name label
  if (name.size() <= kMax) return name;
  // FNV-1a: the same name in every process.
  uint32_t hash = 2166136261u;
  for (char c : name) hash = (hash ^ static_cast<unsigned char>(c)) * 16777619u;
  std::string cut = name.substr(0, kMax - 9);
  while (!cut.empty() && (cut.back() == '-' || cut.back() == '.')) cut.pop_back();
  return absl::StrCat(cut, "-", absl::Hex(hash, absl::kZeroPad8));
}

std::string DriverDaemonSetOfLabels(absl::string_view pool, absl::string_view os) {
  return DriverDaemonSetName(pool.empty() || pool == "default" ? "" : std::string(pool),
                             std::string(os));
}

std::vector<DriverSet> DriverSets(const PolicySpec& policy, const std::vector<NodePool>& pools,
                                  const std::map<std::string, std::set<std::string>>& driver_os) {
  std::vector<std::string> pool_names = {""};
  for (const auto& pool : pools) {
    if (pool.driver_version.has_value() || pool.driver_repository.has_value()) {
      pool_names.push_back(pool.name);
    }
  }
  std::vector<DriverSet> out;
  for (const std::string& pool : pool_names) {
    if (!DriverPerNode(policy.driver)) {
      out.push_back({.pool = pool, .os = "", .name = DriverDaemonSetName(pool)});
      continue;
    }
    auto it = driver_os.find(pool);
    if (it == driver_os.end()) continue;  // no node for it yet
    for (const std::string& os : it->second) {
      out.push_back({.pool = pool, .os = os, .name = DriverDaemonSetName(pool, os)});
    }
  }
  return out;
}

absl::StatusOr<std::vector<Json>> RenderOperands(const RenderInput& in) {
  const PolicySpec& policy = in.policy;
  std::vector<Json> cluster, config_maps, accounts, rbac, daemon_sets;
  // For workloads that name it (as on NVIDIA's operator): the runtime component defines the
  // handler on nodes where the NVIDIA Container Toolkit is installed. gpuop's own pods never use
  // it, so without the runtime component nothing does and it is not rendered.
  if (policy.Enabled(Component::kRuntime)) {
    cluster.push_back({{"apiVersion", "node.k8s.io/v1"},
                       {"kind", "RuntimeClass"},
                       {"metadata", Meta(kNvidiaRuntimeClass, "", "runtime")},
                       {"handler", kNvidiaRuntimeClass}});
  }
  // gpuop's own, for the components that manage GPUs without privilege (ComponentSpec::
  // gpu_management); the runtime component defines its handler on every node.
  if (render::ManagementRuntime(policy)) {
    cluster.push_back({{"apiVersion", "node.k8s.io/v1"},
                       {"kind", "RuntimeClass"},
                       {"metadata", Meta(render::kGpuopRuntimeClass, "", "runtime")},
                       {"handler", render::kGpuopRuntimeClass}});
  }
  if (policy.Enabled(Component::kDiscovery)) {
    AddComponent(render::SpecFor(Component::kDiscovery, policy, in.ns), "gpuop-discovery", in,
                 accounts, rbac, daemon_sets);
  }
  for (Component c : kAllComponents) {
    if (!policy.Enabled(c) || c == Component::kDriver) continue;
    ComponentSpec spec = render::SpecFor(c, policy, in.ns);
    for (auto& [cm, path] : spec.config_maps) {
      if (cm == "gpuop-device-plugin-config" && !policy.components.device_plugin_config.empty()) {
        cm = policy.components.device_plugin_config;  // the user's own configurations
      }
    }
    AddComponent(spec, absl::StrCat("gpuop-", ComponentName(c)), in, accounts, rbac, daemon_sets);
  }
  if (policy.Enabled(Component::kDriver)) {
    // One DaemonSet per driver: the policy's and each pool's that sets its own, and with
    // DriverPerNode one per OS (and kernel) among their nodes. They share one ServiceAccount.
    const std::string account = DriverDaemonSetName("");
    accounts.push_back(ServiceAccount(account, in.ns, "driver", true));
    const std::vector<render::Rule> rules = render::DriverRules();
    rbac.push_back(ClusterRole(account, "driver", rules));
    rbac.push_back(ClusterRoleBinding(account, in.ns, "driver"));
    for (const DriverSet& set : DriverSets(policy, in.pools, in.driver_os)) {
      const NodePool* pool = nullptr;
      for (const auto& p : in.pools) {
        if (p.name == set.pool) pool = &p;
      }
      std::optional<std::string> repository, version;
      if (pool != nullptr) {
        repository = pool->driver_repository;
        version = pool->driver_version;
      }
      ComponentSpec spec =
          render::DriverSpecFor(policy, set.pool, repository.value_or(policy.driver.repository),
                                version.value_or(policy.driver.version), set.os);
      daemon_sets.push_back(DaemonSet(spec, set.name, policy, in.ns));
      daemon_sets.back()["spec"]["template"]["spec"]["serviceAccountName"] = account;
    }
  }
  if ((policy.Enabled(Component::kDevicePlugin) || policy.Enabled(Component::kLabels)) &&
      policy.components.device_plugin_config.empty()) {
    config_maps.push_back(render::DevicePluginConfigMap(policy, in.pools, in.ns));
  }
  if (policy.Enabled(Component::kMigManager) && policy.components.mig_config.empty()) {
    config_maps.push_back(render::MigConfigMap(in.ns));
  }
  std::vector<Json> monitoring;
  if (policy.Enabled(Component::kExporter)) {
    monitoring = render::ExporterMonitoring(policy, in.ns, Labels("exporter", "gpuop-exporter"));
  }
  std::vector<Json> out;
  for (auto* group : {&cluster, &config_maps, &accounts, &rbac, &daemon_sets, &monitoring}) {
    for (auto& o : *group) out.push_back(std::move(o));
  }
  if (!in.policy_uid.empty()) {
    const Json owner = {{"apiVersion", kApiVersion}, {"kind", "GPUClusterPolicy"},
                        {"name", in.policy_name},    {"uid", in.policy_uid},
                        {"controller", true},        {"blockOwnerDeletion", false}};
    for (Json& o : out) {
      Json& meta = o["metadata"];
      if (meta["labels"].value(kComponentLabel, "") == ComponentName(Component::kDriver)) continue;
      meta["ownerReferences"] = Json::array({owner});
    }
  }
  return out;
}

}  // namespace gpuop::op
