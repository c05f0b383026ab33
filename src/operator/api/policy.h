#ifndef GPUOP_OPERATOR_API_POLICY_H_
#define GPUOP_OPERATOR_API_POLICY_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gpuop::op {

// GPUClusterPolicy (gpuop.io/v1alpha1), as the operator uses it. The CRD
// (deploy/helm/gpuop/crds/gpuop.io_gpuclusterpolicies.yaml) is the reference: the API server
// validates and defaults; the parser applies the same defaults so that objects from older
// API servers or tests read the same way.

inline constexpr char kApiGroup[] = "gpuop.io";
inline constexpr char kApiVersion[] = "gpuop.io/v1alpha1";
inline constexpr char kPolicyName[] = "default";

// A count or a percentage (maxUnavailable).
struct IntOrPercent {
  int64_t value = 0;
  bool percent = false;
  // The count for `total`; percentages round up (at least 1 when the percentage is positive).
  int64_t Resolve(int64_t total) const;
};

// An environment variable set in a container ({name, value}, NVIDIA's EnvVar).
struct EnvVar {
  std::string name;
  std::string value;
  bool operator==(const EnvVar&) const = default;
};

// A container's compute resources: resource name ("cpu", "memory", ...) -> quantity ("500m",
// "2Gi"), as in core/v1 ResourceRequirements.
struct ResourceRequirements {
  std::map<std::string, std::string> requests;
  std::map<std::string, std::string> limits;
};

// The driver container, in the field names of NVIDIA's ClusterPolicy `driver`. Its image is
// <repository>/<image>:<version>-<os>, where <os> is osTag or, without one, each node's OS from
// its os-release (one DaemonSet per OS, as NVIDIA's operator does); precompiled images are
// <repository>/<image>:<branch>-<kernel>-<os>, one DaemonSet per kernel and OS.
struct DriverSpec {
  bool enabled = true;
  std::string repository = "nvcr.io/nvidia";
  std::string image = "driver";
  std::string version;
  bool use_precompiled = false;
  std::string kernel_module_type = "auto";
  std::string os_tag;  // "": from each node's os-release
  // Set in the driver container, after (and overriding by name) the variables gpuop sets.
  std::vector<EnvVar> env;
  // Replace the driver container's arguments ("init") when not empty.
  std::vector<std::string> args;
  // Replace the driver container's resources when set.
  std::optional<ResourceRequirements> resources;
};

// Whether the driver image depends on the node: no fixed osTag (the OS comes from each node's
// os-release), or precompiled drivers (one image per kernel).
inline bool DriverPerNode(const DriverSpec& driver) {
  return driver.os_tag.empty() || driver.use_precompiled;
}

// Where the components reach the API server, instead of the `kubernetes` Service the kubelet
// hands every container (KUBERNETES_SERVICE_HOST/PORT): for clusters without kube-proxy, or
// whose components run with hostNetwork and cannot reach a Service IP.
struct ApiServerSpec {
  std::string host;  // DNS name, IPv4 or IPv6 address (without brackets)
  int port = 0;      // 1..65535
};

// The per-node components, one DaemonSet each: discovery on every Linux node not yet known to
// have GPUs or not, the others (kAllComponents) on every managed GPU node.
enum class Component {
  kDiscovery,
  kDriver,
  kRuntime,
  kCdi,
  kLabels,
  kDevicePlugin,
  kHealth,
  kExporter,
  kValidator,
  kMigManager,
  kPowerManager,
  // MPS control daemons, on the nodes the labels component marks nvidia.com/mps.capable=true;
  // deployed with the device plugin, as NVIDIA's chart deploys its mps-control-daemon.
  kMpsDaemon,
};
inline constexpr Component kAllComponents[] = {
    Component::kDriver,       Component::kRuntime,      Component::kCdi,      Component::kLabels,
    Component::kDevicePlugin, Component::kHealth,       Component::kExporter, Component::kValidator,
    Component::kMigManager,   Component::kPowerManager, Component::kMpsDaemon};
// The components that run on GPU nodes, selected by their deploy labels. Discovery is not one
// of them: it runs before a node is known to be a GPU node.
// "discovery", "driver", "runtime", "cdi", "labels", "device-plugin", "health", "exporter",
// "validator", "mig-manager", "power-manager", "mps-daemon": DaemonSet names (gpuop-<name>) and,
// except for discovery, deploy label suffixes.
const char* ComponentName(Component c);

struct ComponentsSpec {
  // PCI discovery on nodes without gpuop.io/gpu.present: finds GPU nodes without NFD.
  bool discovery = true;
  bool labels = true;
  bool runtime = true;
  std::string runtime_kind = "auto";  // auto, containerd, crio
  bool runtime_set_as_default = false;
  bool cdi = true;
  bool device_plugin = true;
  std::string device_plugin_config;  // ConfigMap name; "" for the built-in default
  std::string device_plugin_default_config = "default";
  std::string mig_strategy = "single";  // none, single, mixed
  bool exporter = true;
  int exporter_port = 9400;
  absl::Duration exporter_interval = absl::Seconds(15);
  // exporter.kubernetesVirtualGpus: a shared GPU's series once per pod (the agent's
  // --kubernetes-virtual-gpus, after dcgm-exporter's flag).
  bool exporter_virtual_gpus = false;
  // A Prometheus Operator ServiceMonitor for the exporter's Service (exporter.serviceMonitor).
  bool exporter_service_monitor = false;
  // Its scrape interval; nullopt: the exporter's sampling interval.
  std::optional<absl::Duration> exporter_scrape_interval;
  // Labels on the ServiceMonitor, for the Prometheus that selects it (e.g. release=prometheus).
  std::map<std::string, std::string> exporter_service_monitor_labels;
  bool health = true;
  // Added to the XIDs whose class marks no GPU (agent/health/xid_classes.h).
  std::vector<int64_t> ignored_xids;
  // Replaces the catalogue's action for these XIDs: "Ignore", "RestartApp", "ResetGpu",
  // "RebootNode" or "ContactSupport".
  std::map<int64_t, std::string> xid_actions;
  bool validator = true;
  bool mig_manager = false;
  std::string mig_config;  // ConfigMap name
  // A MIG mode change whose GPU reset is refused reboots the node (through remediation's reboot
  // annotation), as mig-parted's WITH_REBOOT does; otherwise it fails.
  bool mig_with_reboot = false;
  bool power_manager = false;
  absl::Duration power_idle_after = absl::Minutes(10);
  int power_floor_percent = 60;
};

struct UpgradeSpec {
  bool auto_upgrade = true;
  int64_t max_parallel = 1;  // 0: unlimited
  IntOrPercent max_unavailable = {.value = 25, .percent = true};
  std::string wait_for_jobs_selector;                           // "" : do not wait
  absl::Duration wait_for_jobs_timeout = absl::ZeroDuration();  // 0: forever
  bool pod_deletion_force = false;
  bool pod_deletion_delete_empty_dir = false;
  absl::Duration pod_deletion_timeout = absl::Minutes(5);
  bool drain_enabled = false;
  bool drain_force = false;
  bool drain_delete_empty_dir = false;
  std::string drain_selector;
  absl::Duration drain_timeout = absl::Minutes(10);
  absl::Duration pod_restart_timeout = absl::Minutes(15);
  absl::Duration validation_timeout = absl::Minutes(10);
};

enum class RemediationStep { kTaint, kDrain, kRestartDriver, kRequestReboot, kValidate, kUntaint };
const char* RemediationStepName(RemediationStep step);

struct RemediationSpec {
  bool enabled = true;
  std::vector<RemediationStep> steps = {RemediationStep::kTaint, RemediationStep::kDrain,
                                        RemediationStep::kRestartDriver, RemediationStep::kValidate,
                                        RemediationStep::kUntaint};
  int64_t max_parallel = 1;
  int64_t max_attempts = 3;
  absl::Duration window = absl::Hours(24);
  absl::Duration step_timeout = absl::Minutes(15);
  std::string reboot_annotation = "gpuop.io/reboot-requested";
};

struct PolicySpec {
  std::string image = "ghcr.io/gpuop/gpuop:0.1.0";
  std::string image_pull_policy = "IfNotPresent";
  std::vector<std::string> image_pull_secrets;
  std::map<std::string, std::string> node_selector;
  nlohmann::json tolerations = nlohmann::json::array();
  // Every component pod runs in its node's network namespace (hostNetwork, with dnsPolicy
  // ClusterFirstWithHostNet); the ports they listen on open on the node.
  bool host_network = false;
  std::optional<ApiServerSpec> api_server;
  DriverSpec driver;
  ComponentsSpec components;
  UpgradeSpec upgrade;
  RemediationSpec remediation;

  bool Enabled(Component c) const;
};

struct ClusterPolicy {
  std::string name;
  std::string uid;
  int64_t generation = 0;
  PolicySpec spec;
};

// Reads a GPUClusterPolicy. InvalidArgument naming the field ("spec.upgrade.maxUnavailable:
// ...") for what the CRD would have rejected.
[[nodiscard]] absl::StatusOr<ClusterPolicy> ParseClusterPolicy(const nlohmann::json& object);

// "1h30m", "90s", "0s" (the CRD's duration form). `field` names it in errors.
[[nodiscard]] absl::StatusOr<absl::Duration> ParseDurationField(const nlohmann::json& value,
                                                                const std::string& field);

}  // namespace gpuop::op

#endif  // GPUOP_OPERATOR_API_POLICY_H_
