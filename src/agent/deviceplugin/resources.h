#ifndef GPUOP_AGENT_DEVICEPLUGIN_RESOURCES_H_
#define GPUOP_AGENT_DEVICEPLUGIN_RESOURCES_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/deviceplugin/config.h"
#include "hw/model.h"

namespace gpuop::agent {

// One device as the kubelet sees it: a whole GPU, a MIG device, or one time-slicing replica of
// either.
struct PluginDevice {
  // The kubelet's device ID: the GPU or MIG UUID (the PCI address for AMD), with "::<n>" for
  // replica n of a shared device. At most 63 characters.
  std::string id;
  // What the container gets: the GPU or MIG UUID (AMD: PCI address).
  std::string physical_id;
  hw::Vendor vendor = hw::Vendor::kNvidia;
  int gpu_index = 0;   // the GPU it is on
  std::string gpu_id;  // that GPU's UUID (AMD: PCI address), for health
  bool mig = false;
  std::optional<unsigned int> gpu_instance_id;  // MIG devices
  std::optional<int> numa_node;
  // Fully qualified CDI device name ("nvidia.com/gpu=GPU-...").
  std::string cdi_name;
  // Device nodes to pass without CDI (AMD: /dev/kfd and the DRM nodes).
  std::vector<std::string> device_nodes;
  int replica = 0;
  int replicas = 1;  // > 1 when time-sliced
};

// Every resource the node advertises and its devices, in a stable order.
struct ResourcePlan {
  std::map<std::string, std::vector<PluginDevice>> resources;
  // Things the operator should know but that do not stop the plugin ("GPU 3 has MIG enabled
  // and is not advertised under strategy none").
  std::vector<std::string> warnings;

  // Replicas per device of `resource` when they are all equal, otherwise the largest.
  int Replicas(const std::string& resource) const;
};

// NVIDIA's MIG resource name for a profile: "nvidia.com/mig-1g.10gb"; '+' becomes '.'.
std::string MigResourceName(const std::string& profile);

// Works out resources from the node's GPUs (any vendors) and the plugin configuration:
// - strategy none: whole NVIDIA GPUs as nvidia.com/gpu; MIG-enabled GPUs are left out with a
//   warning (a GPU in MIG mode cannot run work as a whole);
// - strategy single: every NVIDIA GPU must have MIG on and every MIG device the same profile;
//   the MIG devices become nvidia.com/gpu. FailedPrecondition, naming the GPU, otherwise;
// - strategy mixed: MIG devices as nvidia.com/mig-<profile>, GPUs without MIG as
//   nvidia.com/gpu;
// - AMD GPUs as amd.com/gpu;
// then time-slicing rules replicate the devices they select (renamed "<resource>.shared" when
// the rule or renameByDefault says so). A rule naming a device that does not exist is
// InvalidArgument naming the rule's device.
[[nodiscard]] absl::StatusOr<ResourcePlan> PlanResources(const std::vector<hw::Gpu>& gpus,
                                                         const DevicePluginConfig& config);

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_DEVICEPLUGIN_RESOURCES_H_
