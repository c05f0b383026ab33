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
  // The device by index, for deviceIDStrategy index: "3", MIG "3:1" (GPU index : the MIG
  // device's index on it), as NVIDIA's plugin and CDI spec name it.
  std::string index_name;
  bool mig = false;
  std::optional<unsigned int> gpu_instance_id;  // MIG devices
  std::optional<int> numa_node;
  // Fully qualified CDI device name in gpuop's spec ("nvidia.gpuop.io/gpu=GPU-...", see
  // agent/cdi/kinds.h; AMD: "amd.com/gpu=<PCI address>").
  std::string cdi_name;
  // Device nodes to pass without CDI (AMD: /dev/kfd and the DRM nodes).
  std::vector<std::string> device_nodes;
  int replica = 0;
  int replicas = 1;  // > 1 when shared
  bool mps = false;  // a replica shared with MPS (sharing.mps)
};

// Every resource the node advertises and its devices, in a stable order.
struct ResourcePlan {
  // A resource may have no devices: nvidia.com/gpu under an invalid single layout stays
  // registered with none, so the node shows it with capacity 0 (as GPU feature discovery labels
  // it with count 0) and a fixed layout brings the devices back without a new registration.
  std::map<std::string, std::vector<PluginDevice>> resources;
  // Things the operator should know but that do not stop the plugin ("time-slicing rule 1: the
  // node has no nvidia.com/mig-1g.5gb").
  std::vector<std::string> warnings;
  // Why the node's MIG layout does not fit strategy single; empty when it does (or under another
  // strategy). Also in `warnings`.
  std::string mig_invalid;

  // Replicas per device of `resource` when they are all equal, otherwise the largest.
  int Replicas(const std::string& resource) const;
  // The kubelet's device IDs of `resource`, in the plan's order; empty when it has none.
  std::vector<std::string> Ids(const std::string& resource) const;
};

// The GPUs each resource shares with MPS and their replicas (GPU UUID -> replicas), for the
// resources that have replicas shared with MPS: what the MPS daemons start and what their ready
// file must list before the plugin serves the resource (agent/mps/root.h).
std::map<std::string, std::map<std::string, int>> MpsShares(const ResourcePlan& plan);

// NVIDIA's MIG resource name for a profile: "nvidia.com/mig-1g.10gb"; '+' becomes '.'.
std::string MigResourceName(const std::string& profile);

// NVIDIA's resource pattern match: `*` is any run of characters and the match is unanchored
// (the pattern may match anywhere in `s`), as its wildcard-to-regexp conversion does.
bool PatternMatches(const std::string& pattern, const std::string& s);

// How MIG strategy single reads a node's NVIDIA GPUs, as NVIDIA's device plugin
// (internal/rm/device_map.go) and GPU feature discovery (internal/lm/mig-strategy.go) do.
struct MigSingleLayout {
  enum class Kind {
    kWholeGpus,   // no GPU has MIG enabled: whole GPUs are nvidia.com/gpu, as under none
    kMigDevices,  // every GPU has MIG enabled with devices of one profile: those are nvidia.com/gpu
    kInvalid,     // anything else: nothing is advertised, labels say <product>-MIG-INVALID
  };
  Kind kind = Kind::kWholeGpus;
  std::string profile;  // kMigDevices: the profile of every MIG device
  std::string reason;   // kInvalid: what is wrong, naming GPUs or profiles
  // kMigDevices and kInvalid: the first GPU with MIG enabled (GFD names the node's product after
  // it); null for kWholeGpus.
  const hw::Gpu* first_mig_gpu = nullptr;
};

// Classifies the NVIDIA GPUs among `gpus` (others are ignored); the result points into `gpus`.
// Invalid, checked in this order: a GPU with MIG enabled but no MIG devices; GPUs with MIG
// enabled next to GPUs with it disabled; MIG devices of more than one profile.
MigSingleLayout ClassifyMigSingle(const std::vector<hw::Gpu>& gpus);

// Works out resources from the node's GPUs (any vendors) and the plugin configuration, with the
// semantics of NVIDIA's device plugin:
// - strategy none: every NVIDIA GPU as nvidia.com/gpu, whatever its MIG mode;
// - strategy single (ClassifyMigSingle): without MIG-enabled GPUs, whole GPUs as nvidia.com/gpu;
//   with every GPU in MIG mode and one profile, the MIG devices as nvidia.com/gpu; an invalid
//   layout advertises nvidia.com/gpu with no devices and says why in `mig_invalid` (NVIDIA's
//   plugin fails to start there; gpuop keeps serving so that the fixed layout is picked up);
// - strategy mixed: MIG devices as nvidia.com/mig-<profile>, GPUs without MIG as
//   nvidia.com/gpu; a MIG-enabled GPU without MIG devices contributes nothing (a warning);
// - AMD GPUs as amd.com/gpu;
// resources.gpus / resources.mig name the resources instead when set (the first pattern that
// matches the GPU's product or the MIG profile; a device no pattern matches is not advertised,
// with a warning). Then the sharing rules replicate the devices they select (all, the first
// `count` or a list), advertised under the rule's rename or "<resource>.shared" under
// renameByDefault. A rule naming a device that does not exist, or a device two rules select, is
// InvalidArgument naming the rule; a rule for a resource without devices does nothing.
[[nodiscard]] absl::StatusOr<ResourcePlan> PlanResources(const std::vector<hw::Gpu>& gpus,
                                                         const DevicePluginConfig& config);

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_DEVICEPLUGIN_RESOURCES_H_
