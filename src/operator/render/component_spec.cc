#include "operator/render/component_spec.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "operator/nodes/node_labels.h"
#include "operator/render/render.h"

namespace gpuop::op::render {

namespace {

// Host paths the components share.
const HostMount kRunGpuop{"run-gpuop", "/run/gpuop", "/run/gpuop", false, "DirectoryOrCreate"};
const HostMount kDevicePlugins{"device-plugins", "/var/lib/kubelet/device-plugins",
                               "/var/lib/kubelet/device-plugins", false, "Directory"};
const HostMount kPodResources{"pod-resources", "/var/lib/kubelet/pod-resources",
                              "/var/lib/kubelet/pod-resources", true, "Directory"};
const HostMount kHostSys{"host-sys", "/sys", "/host/sys", true, "Directory"};
// The host's root, read-only, for the driver's libraries: the host's own (a host driver) and
// the driver container's root at /host/run/nvidia/driver, whose remounts after a driver restart
// reach the container through HostToContainer. Nothing is created on the host (an AMD node gets
// no /run/nvidia), and the agent looks for libnvidia-ml and libcuda there itself
// (--host-root), so no component depends on a container runtime that injects the driver.
const HostMount kHostRoot{"host-root", "/", "/host", true, "Directory", false, true};
// The agent's flag that points it there.
constexpr char kHostRootFlag[] = "--host-root=/host";

const Rule kReadNodes{{""}, {"nodes"}, {"get", "list", "watch"}};
const Rule kPatchNodeStatus{{""}, {"nodes/status"}, {"patch"}};
const Rule kWriteEvents{{"events.k8s.io"}, {"events"}, {"create", "patch"}};

std::vector<std::string> Agent(std::initializer_list<std::string> args) {
  std::vector<std::string> out = {"gpuop-agent"};
  out.insert(out.end(), args);
  return out;
}

std::string Seconds(absl::Duration d) { return absl::StrCat(absl::ToInt64Seconds(d)); }

// The policy's health.ignoredXids is the whole set of ignored XIDs (its default is the
// application errors): the agent's --ignore-xids adds to its defaults, so they are replaced.
// The policy's XID settings and where the recovery evidence is (agent/health/recovery_evidence.h).
void AddHealthPolicy(std::vector<std::string>& command, const ComponentsSpec& c) {
  if (!c.ignored_xids.empty())
    command.push_back("--ignore-xids=" + absl::StrJoin(c.ignored_xids, ","));
  if (!c.xid_actions.empty()) {
    command.push_back("--xid-actions=" +
                      absl::StrJoin(c.xid_actions, ",", absl::PairFormatter("=")));
  }
  command.push_back("--driver-ready-file=/host/run/nvidia/validations/.driver-ctr-ready");
  command.push_back("--gpu-reset-dir=/run/gpuop/gpu-resets");
}

}  // namespace

ComponentSpec SpecFor(Component component, const PolicySpec& policy, const std::string& ns) {
  const ComponentsSpec& c = policy.components;
  ComponentSpec s{.component = component, .image = policy.image};
  (void)ns;
  switch (component) {
    case Component::kDiscovery:
      // Reads PCI sysfs only (world-readable files), labels its Node and waits to be removed:
      // once the label is there the affinity no longer matches and the DaemonSet controller
      // deletes the pod, so known nodes run nothing of it.
      s.command = Agent({"discover-pci", "--sysfs-root=/host/sys",
                         "--os-release=/host/etc/os-release", "--label-node"});
      s.mounts = {kHostSys,
                  {"host-os-release", "/etc/os-release", "/host/etc/os-release", true, "File"}};
      s.rules = {{{""}, {"nodes"}, {"get", "patch"}}};
      s.run_as_user = 65532;
      s.deploy_label = false;
      s.affinity = {
          {"nodeAffinity",
           {{"requiredDuringSchedulingIgnoredDuringExecution",
             {{"nodeSelectorTerms",
               nlohmann::json::array(
                   {{{"matchExpressions",
                      nlohmann::json::array({{{"key", "kubernetes.io/os"},
                                              {"operator", "In"},
                                              {"values", nlohmann::json::array({"linux"})}},
                                             {{"key", kAgentGpuPresentLabel},
                                              {"operator", "DoesNotExist"}}})}}})}}}}}};
      break;
    case Component::kLabels:
      s.command = Agent({"labels", kHostRootFlag, "--sysfs-root=/host/sys",
                         "--host-proc=/host/proc", "--config-dir=/etc/gpuop/device-plugin",
                         "--config-name=" + c.device_plugin_default_config,
                         "--layout-file=/run/gpuop/mig-layout"});
      s.mounts = {kHostRoot, kRunGpuop};
      s.rules = {{{""}, {"nodes"}, {"get", "list", "watch", "patch"}}};
      s.gpu_management = true;  // MIG profiles and instances for its labels, as NVIDIA's GFD
      s.waits_for_driver = c.validator;
      s.config_maps = {{"gpuop-device-plugin-config", "/etc/gpuop/device-plugin"}};
      break;
    case Component::kRuntime:
      s.command = Agent(
          {"runtime", "configure", "--keep-running", "--host-root=/host", "--nvidia-runtime"});
      if (c.runtime_kind != "auto") s.command.push_back("--runtime=" + c.runtime_kind);
      if (c.runtime_set_as_default) s.command.push_back("--set-as-default");
      // The handler of the RuntimeClass gpuop, for the gpu_management components.
      if (ManagementRuntime(policy)) s.command.push_back("--gpuop-runtime");
      // Edits the runtime's configuration and restarts it: host root and host PIDs.
      s.mounts = {{"host-root", "/", "/host", false, "Directory"}};
      s.privileged = true;
      s.host_pid = true;
      break;
    case Component::kCdi:
      // Installs gpuop-cdi-hook where the spec names it (the runtime runs it on the host) through
      // a writable mount of that one directory; the host root stays read-only.
      s.command = Agent({"cdi", "generate", "--watch", "--output-dir=/var/run/cdi",
                         "--driver-root=auto", kHostRootFlag, "--layout-file=/run/gpuop/mig-layout",
                         "--hook-install-dir=/var/lib/gpuop/bin"});
      s.mounts = {
          {"cdi", "/var/run/cdi", "/var/run/cdi", false, "DirectoryOrCreate"},
          {"hook-dir", "/var/lib/gpuop/bin", "/var/lib/gpuop/bin", false, "DirectoryOrCreate"},
          kHostRoot,
          kRunGpuop};
      // Opens every GPU and MIG capability to describe them, and writes the management spec the
      // other components get their devices from (NVIDIA's toolkit container is privileged too).
      s.privileged = true;
      break;
    case Component::kDevicePlugin:
      s.command = Agent({"device-plugin", kHostRootFlag, "--sysfs-root=/host/sys",
                         "--config-dir=/etc/gpuop/device-plugin",
                         "--config-name=" + c.device_plugin_default_config,
                         "--health-file=/run/gpuop/gpu-health.json",
                         "--layout-file=/run/gpuop/mig-layout"});
      // Without gpuop's CDI component there is no spec to name devices in.
      if (!c.cdi) s.command.push_back("--cdi-enabled=false");
      AddHealthPolicy(s.command, c);
      s.mounts = {kDevicePlugins, kHostRoot, kRunGpuop};
      s.rules = {kReadNodes};
      s.gpu_management = true;  // MIG devices and health, as NVIDIA's device plugin
      s.waits_for_driver = c.validator;
      s.config_maps = {{"gpuop-device-plugin-config", "/etc/gpuop/device-plugin"}};
      break;
    case Component::kHealth:
      s.command = Agent({"health", kHostRootFlag, "--health-file=/run/gpuop/gpu-health.json",
                         "--state-file=/run/gpuop/health-state.json"});
      AddHealthPolicy(s.command, c);
      s.mounts = {kHostRoot, kRunGpuop};
      s.rules = {{{""}, {"nodes"}, {"get"}}, kPatchNodeStatus, kWriteEvents};
      s.gpu_management = true;  // XID events of every GPU and MIG instance
      s.waits_for_driver = c.validator;
      break;
    case Component::kExporter:
      s.command = Agent({"exporter", kHostRootFlag, absl::StrCat("--listen=:", c.exporter_port),
                         "--interval=" + Seconds(c.exporter_interval),
                         "--pod-resources-socket=/var/lib/kubelet/pod-resources/kubelet.sock"});
      if (c.exporter_virtual_gpus) s.command.push_back("--kubernetes-virtual-gpus");
      s.mounts = {kPodResources, kHostRoot};
      s.gpu_management = true;  // per-instance metrics, as dcgm-exporter (SYS_ADMIN)
      s.waits_for_driver = c.validator;
      s.ports = {{{"name", "metrics"}, {"containerPort", c.exporter_port}, {"protocol", "TCP"}}};
      s.readiness_probe = {{"httpGet", {{"path", "/healthz"}, {"port", "metrics"}}},
                           {"periodSeconds", 10}};
      break;
    case Component::kValidator:
      s.command =
          Agent({"validate", kHostRootFlag, "--keep-running", "--timeout=0",
                 "--status-dir=/run/gpuop/validations", "--checks=driver,cuda,device-plugin"});
      s.mounts = {kHostRoot, kRunGpuop};
      s.rules = {{{""}, {"nodes"}, {"get"}}, kPatchNodeStatus};
      // Runs CUDA on every GPU and every MIG device, each of which needs its own instance's
      // access capability (NVIDIA's validator is privileged too).
      s.privileged = true;
      s.readiness_probe = {
          {"exec",
           {{"command",
             {"gpuop-agent", "validate", "--probe", kHostRootFlag,
              "--status-dir=/run/gpuop/validations", "--checks=driver,cuda,device-plugin"}}}},
          {"periodSeconds", 5}};
      break;
    case Component::kMigManager:
      s.command = Agent({"mig", kHostRootFlag, "--config-file=/etc/gpuop/mig/config.yaml",
                         "--layout-file=/run/gpuop/mig-layout",
                         "--reboot-annotation=" + policy.remediation.reboot_annotation});
      if (c.mig_with_reboot) s.command.push_back("--with-reboot");
      s.mounts = {kHostRoot, kRunGpuop};
      // Pauses GPU clients through their deploy labels and waits for their pods to go.
      s.rules = {{{""}, {"nodes"}, {"get", "list", "watch", "patch"}},
                 {{""}, {"pods"}, {"get", "list", "watch"}},
                 kWriteEvents};
      s.privileged = true;  // MIG reconfiguration needs CAP_SYS_ADMIN on the GPUs
      s.waits_for_driver = c.validator;
      s.config_maps = {
          {c.mig_config.empty() ? "gpuop-mig-config" : c.mig_config, "/etc/gpuop/mig"}};
      break;
    case Component::kPowerManager:
      s.command = Agent({"power", kHostRootFlag, "--idle-after=" + Seconds(c.power_idle_after),
                         absl::StrCat("--floor-percent=", c.power_floor_percent),
                         "--pod-resources-socket=/var/lib/kubelet/pod-resources/kubelet.sock",
                         "--limit-record=/var/lib/gpuop/power-limits.json"});
      // The record of the limits it lowered lives on the node, so that a restarted agent and
      // the uninstall's undo give back exactly what was found.
      s.mounts = {kPodResources,
                  kHostRoot,
                  {"gpuop-state", "/var/lib/gpuop", "/var/lib/gpuop", false, "DirectoryOrCreate"}};
      // Follows its Node's gpuop.io/power.policy label (a pool's power settings).
      s.rules = {kReadNodes};
      s.gpu_management = true;  // setting power limits: NVML asks for an administrator
      s.waits_for_driver = c.validator;
      break;
    case Component::kMpsDaemon:
      // NVIDIA's mps-control-daemon: the device plugin's configuration, the MPS root at /mps
      // and its shm as the daemons' /dev/shm, on the nodes where that configuration selects MPS.
      s.command = Agent({"mps-daemon", kHostRootFlag, "--config-dir=/etc/gpuop/device-plugin",
                         "--config-name=" + c.device_plugin_default_config, "--mps-root=/mps",
                         "--mps-host-root=/run/nvidia/mps"});
      s.mounts = {kHostRoot,
                  {"mps-root", "/run/nvidia/mps", "/mps", false, "DirectoryOrCreate"},
                  {"mps-shm", "/run/nvidia/mps/shm", "/dev/shm", false, "DirectoryOrCreate"}};
      s.rules = {kReadNodes};  // the node's label picks the configuration
      // Sets the GPUs' compute mode and runs the MPS server on them (NVIDIA's daemon is
      // privileged); clients reach it through the pipe and shm directories, so no host PID or
      // IPC namespace is needed.
      s.privileged = true;
      s.waits_for_driver = c.validator;
      s.config_maps = {{"gpuop-device-plugin-config", "/etc/gpuop/device-plugin"}};
      s.extra_node_selector = {{kMpsCapableLabel, "true"}};
      break;
    case Component::kDriver:
      break;  // DriverSpecFor
  }
  // Without gpuop's runtime handler and management spec there is no other way to the GPUs.
  if (s.gpu_management && !ManagementRuntime(policy)) {
    s.gpu_management = false;
    s.privileged = true;
  }
  return s;
}

bool ManagementRuntime(const PolicySpec& policy) {
  return policy.Enabled(Component::kRuntime) && policy.Enabled(Component::kCdi);
}

std::vector<Rule> DriverRules() { return {{{""}, {"nodes"}, {"get", "patch"}}}; }

ComponentSpec DriverSpecFor(const PolicySpec& policy, const std::string& pool,
                            const std::string& repository, const std::string& version,
                            const std::string& os) {
  const DriverSpec& d = policy.driver;
  std::string tag = absl::StrCat(version, "-", d.os_tag);
  if (!os.empty()) {
    const std::string branch = d.use_precompiled ? version.substr(0, version.find('.')) : version;
    tag = absl::StrCat(branch, "-", os);
  }
  ComponentSpec s{.component = Component::kDriver,
                  .image = absl::StrCat(repository, "/", d.image, ":", tag)};
  // NVIDIA's driver container: driver.args replace "init", as in NVIDIA's ClusterPolicy.
  s.command = {"nvidia-driver"};
  s.args = d.args.empty() ? std::vector<std::string>{"init"} : d.args;
  // NVIDIA's driver container picks the kernel modules to build or load from KERNEL_MODULE_TYPE
  // (auto, open, proprietary), as NVIDIA's operator sets it from its kernelModuleType; the user's
  // env comes after it and wins.
  s.env = {{"KERNEL_MODULE_TYPE", d.kernel_module_type}};
  s.env.insert(s.env.end(), d.env.begin(), d.env.end());
  s.resources = d.resources;
  // Loads kernel modules and exposes its root to the other components.
  s.privileged = true;
  s.host_pid = true;
  s.mounts = {{"run-nvidia", "/run/nvidia", "/run/nvidia", false, "DirectoryOrCreate", true},
              {"var-log", "/var/log", "/var/log", false, "Directory"},
              {"dev-log", "/dev/log", "/dev/log", false, ""},
              {"host-os-release", "/etc/os-release", "/host-etc/os-release", true, "File"},
              // GSP firmware: the container points the kernel's firmware search path at its
              // own lib/firmware, published on the host under the driver root, so the kernel
              // finds the firmware the driver ships when the module loads.
              {"firmware-search-path", "/sys/module/firmware_class/parameters/path",
               "/sys/module/firmware_class/parameters/path", false, "File"},
              {"nv-firmware", "/run/nvidia/driver/lib/firmware", "/lib/firmware", false,
               "DirectoryOrCreate"}};
  // Ready once the driver answers, as NVIDIA's driver DaemonSet signals it: the startup probe
  // runs nvidia-smi and leaves .driver-ctr-ready in the validations directory, the preStop hook
  // takes it away. Probed from the start every 5 s for up to 30 minutes (building the kernel
  // modules takes minutes), not after a fixed 60 s delay: a node whose driver loads in seconds
  // is Ready in seconds.
  s.startup_probe = {{"exec",
                      {{"command",
                        {"sh", "-c",
                         "nvidia-smi && mkdir -p /run/nvidia/validations &&"
                         " touch /run/nvidia/validations/.driver-ctr-ready"}}}},
                     {"periodSeconds", 5},
                     {"failureThreshold", 360},
                     {"timeoutSeconds", 60}};
  s.lifecycle = {
      {"preStop",
       {{"exec", {{"command", {"rm", "-f", "/run/nvidia/validations/.driver-ctr-ready"}}}}}}};
  s.memory_limit = "";  // building kernel modules needs what it needs
  s.on_delete = true;
  // A pod started outside the upgrade (deleted by hand, a node relabelled) over a loaded driver
  // waits for the node to be drained before it loads (safe_load.h).
  s.safe_load = true;
  s.rules = DriverRules();
  s.extra_node_selector = {{"gpuop.io/driver.pool", pool.empty() ? "default" : pool}};
  if (!os.empty()) s.extra_node_selector["gpuop.io/driver.os"] = os;
  // Never two driver pods on one node: when a node moves to another pool's DaemonSet, the new
  // pod stays Pending until the old one is gone (a terminating pod still counts), so two
  // containers never load and unload the kernel modules over each other.
  s.affinity = {{"podAntiAffinity",
                 {{"requiredDuringSchedulingIgnoredDuringExecution",
                   {{{"labelSelector",
                      {{"matchLabels",
                        {{"app.kubernetes.io/component", "driver"},
                         {"app.kubernetes.io/managed-by", "gpuop-operator"}}}}},
                     {"topologyKey", "kubernetes.io/hostname"}}}}}}};
  // A DaemonSet for every node (no gpuop.io/driver.os) lets go of a node once the node has an
  // image of its own, so a move to a per-OS DaemonSet completes node by node.
  if (os.empty()) {
    s.affinity["nodeAffinity"] = {
        {"requiredDuringSchedulingIgnoredDuringExecution",
         {{"nodeSelectorTerms",
           nlohmann::json::array({{{"matchExpressions",
                                    nlohmann::json::array({{{"key", "gpuop.io/driver.os"},
                                                            {"operator", "DoesNotExist"}}})}}})}}}};
  }
  return s;
}

}  // namespace gpuop::op::render
