#ifndef GPUOP_OPERATOR_RENDER_COMPONENT_SPEC_H_
#define GPUOP_OPERATOR_RENDER_COMPONENT_SPEC_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "operator/api/policy.h"

namespace gpuop::op::render {

// A host path a component mounts.
struct HostMount {
  std::string name;
  std::string host_path;
  std::string mount_path;
  bool read_only = true;
  std::string type;            // hostPath type: Directory, DirectoryOrCreate, ... ("" : none)
  bool bidirectional = false;  // mountPropagation Bidirectional (the driver's root)
  // mountPropagation HostToContainer: mounts the host makes later (a restarted driver
  // container's root under /run/nvidia/driver) show up in the container.
  bool host_to_container = false;
};

// An RBAC rule ({apiGroups, resources, verbs}).
struct Rule {
  std::vector<std::string> api_groups;
  std::vector<std::string> resources;
  std::vector<std::string> verbs;
};

// Everything that differs between components' DaemonSets.
struct ComponentSpec {
  Component component;
  std::string image;                 // the gpuop image, or the driver image
  std::vector<std::string> command;  // the container's command
  std::vector<std::string> args;     // the container's arguments (none when empty)
  // Set after the variables every component gets, replacing one of the same name.
  std::vector<EnvVar> env;
  std::vector<HostMount> mounts;
  std::vector<Rule> rules;  // empty: no API access, no token mounted
  // Components find the driver's libraries under their host-root mount themselves
  // (hw::ResolveDriverLibrary). Privileged: those that change the host or the GPUs beyond what
  // gpu_management allows (driver, runtime, CDI, MIG manager, validator, MPS daemon), each
  // saying why.
  bool privileged = false;
  // Opens the node's GPUs (NVML, amdsmi) to read and manage them, as NVIDIA's device plugin,
  // feature discovery and dcgm-exporter do. Where gpuop configures the runtime and writes the CDI
  // specs (both components enabled) the container is not privileged: it runs under the
  // RuntimeClass `gpuop`, gets every GPU's device nodes and the MIG monitor capability from
  // gpuop's management CDI spec (agent/cdi/management.h) and, of all capabilities, CAP_SYS_ADMIN
  // only (what NVML asks of a process for MIG instance data and for setting limits; NVIDIA's
  // charts give those components the same with NVIDIA_MIG_MONITOR_DEVICES=all). Otherwise
  // SpecFor makes it privileged.
  bool gpu_management = false;
  bool host_pid = false;
  // A non-root user for a component that needs no root (securityContext runAsUser and
  // runAsNonRoot).
  std::optional<int64_t> run_as_user;
  // Runs on nodes with gpuop.io/deploy.<component>=true (the GPU node components); when false
  // the DaemonSet selects nodes by `affinity` and the policy's nodeSelector only.
  bool deploy_label = true;
  nlohmann::json affinity;                                       // the pod's affinity; null: none
  std::vector<std::pair<std::string, std::string>> config_maps;  // (name, mount path)
  nlohmann::json ports = nlohmann::json::array();
  nlohmann::json readiness_probe;  // null: none
  nlohmann::json startup_probe;    // null: none
  nlohmann::json lifecycle;        // the container's lifecycle hooks; null: none
  std::string memory_limit = "64Mi";
  // Replaces the default resources (a small request and memory_limit) when set.
  std::optional<ResourceRequirements> resources;
  bool on_delete = false;  // updateStrategy OnDelete (the driver: upgrades go node by node)
  // Starts only once the validator's driver check passed on the node: an init container waits
  // for /run/gpuop/validations/driver-ready, as NVIDIA's operands wait for their validations, so
  // the component opens NVML once the driver answers (and the device files exist) instead of
  // finding no GPU at its start. Only while the validator component is enabled (nothing else
  // writes that file).
  bool waits_for_driver = false;
  std::map<std::string, std::string> extra_node_selector;
  // The driver: an init container that, when a driver is already loaded on the node, waits
  // until the operator has made the node safe for a new one (agent/driver/safe_load.h). Needs
  // `rules` to read and annotate Nodes.
  bool safe_load = false;
};

// The spec of `component` under `policy`; for the driver, `driver_version`/`repository` come
// from the policy or the pool and `pool` selects its nodes. The driver runs
// <repository>/<driver.image>:<version>-<driver.osTag> with NVIDIA's command and arguments
// (nvidia-driver init), the policy's driver.args, driver.env and driver.resources applied.
ComponentSpec SpecFor(Component component, const PolicySpec& policy, const std::string& ns);
// Whether `policy` gives gpuop's components their GPUs through the RuntimeClass `gpuop` (the
// runtime component defines its handler and the CDI component writes the management spec).
bool ManagementRuntime(const PolicySpec& policy);
// The RuntimeClass (and the runtime handler) of gpu_management components.
inline constexpr char kGpuopRuntimeClass[] = "gpuop";
// `os` is the gpuop.io/driver.os value the DaemonSet selects ("" for none): with it the image is
// <repository>/<image>:<version>-<os>, with precompiled drivers <branch>-<os> (the version's
// major, as NVIDIA tags its precompiled images: 570-5.15.0-1043-azure-ubuntu22.04).
ComponentSpec DriverSpecFor(const PolicySpec& policy, const std::string& pool,
                            const std::string& repository, const std::string& version,
                            const std::string& os = "");
// The driver pods' API access: their safe-load step reads and annotates their Node.
std::vector<Rule> DriverRules();

}  // namespace gpuop::op::render

#endif  // GPUOP_OPERATOR_RENDER_COMPONENT_SPEC_H_
