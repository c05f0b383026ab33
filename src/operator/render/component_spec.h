#ifndef GPUOP_OPERATOR_RENDER_COMPONENT_SPEC_H_
#define GPUOP_OPERATOR_RENDER_COMPONENT_SPEC_H_

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
  bool privileged = false;
  bool host_pid = false;
  // Uses NVML: runs with the nvidia runtime class and all GPUs visible to the container.
  bool uses_gpus = false;
  std::vector<std::pair<std::string, std::string>> config_maps;  // (name, mount path)
  nlohmann::json ports = nlohmann::json::array();
  nlohmann::json readiness_probe;  // null: none
  std::string memory_limit = "64Mi";
  // Replaces the default resources (a small request and memory_limit) when set.
  std::optional<ResourceRequirements> resources;
  bool on_delete = false;  // updateStrategy OnDelete (the driver: upgrades go node by node)
  std::map<std::string, std::string> extra_node_selector;
};

// The spec of `component` under `policy`; for the driver, `driver_version`/`repository` come
// from the policy or the pool and `pool` selects its nodes. The driver runs
// <repository>/<driver.image>:<version>-<driver.osTag> with NVIDIA's command and arguments
// (nvidia-driver init), the policy's driver.args, driver.env and driver.resources applied.
ComponentSpec SpecFor(Component component, const PolicySpec& policy, const std::string& ns);
ComponentSpec DriverSpecFor(const PolicySpec& policy, const std::string& pool,
                            const std::string& repository, const std::string& version);

}  // namespace gpuop::op::render

#endif  // GPUOP_OPERATOR_RENDER_COMPONENT_SPEC_H_
