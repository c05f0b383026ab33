#ifndef GPUOP_AGENT_DEVICEPLUGIN_ALLOCATE_RESPONSE_H_
#define GPUOP_AGENT_DEVICEPLUGIN_ALLOCATE_RESPONSE_H_

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "agent/deviceplugin/config.h"
#include "agent/deviceplugin/resources.h"
#include "proto/deviceplugin/v1beta1/api.pb.h"

namespace gpuop::agent {

// Everything that shapes an Allocate answer; the configuration's part is replaced on every
// reload, so resources already served follow the new settings.
struct AllocateSettings {
  DeviceListStrategies strategies;
  DeviceIdStrategy id_strategy = DeviceIdStrategy::kUuid;
  std::string cdi_annotation_prefix = "cdi.k8s.io/";
  bool pass_device_specs = false;
  // Where the device nodes are on the host (flags.nvidiaDevRoot, else nvidiaDriverRoot): the
  // host path of a passed device spec is <dev_root>/dev/....
  std::string dev_root = "/";
  bool gds = false;
  bool mofed = false;
  bool gdrcopy = false;
  bool fail_requests_greater_than_one = false;
  // IMEX channels handed to every container (those of imex.channelIDs that exist on the node).
  std::vector<int> imex_channels;
  // Whether gpuop's CDI component runs on the node. Without it the CDI strategies become
  // envvar (there is no spec to resolve the names against).
  bool cdi_enabled = true;
  // gpuop's CDI spec as this process sees it; `both` leaves CDI out while it is missing.
  std::filesystem::path cdi_spec;
  // Where this process sees the host's root, to check which control nodes exist.
  std::filesystem::path host_root = "/";
  // flags.mpsRoot (host path): where the MPS daemons' directories are.
  std::string mps_root = kDefaultMpsRoot;
};

// The strategies in force for one Allocate, given whether gpuop's CDI spec is on the node.
DeviceListStrategies EffectiveStrategies(const AllocateSettings& settings, bool spec_present);

// NVIDIA's environment variable and the volume-mount strategy's directory.
inline constexpr char kVisibleDevicesEnv[] = "NVIDIA_VISIBLE_DEVICES";
inline constexpr char kVolumeMountsRoot[] = "/var/run/nvidia-container-devices";

// The answer for one container that gets `devices` (distinct physical devices), as NVIDIA's
// device plugin builds it:
// - cdi-cri: cdi_devices "<kind>=<id>"; cdi-annotations: one annotation
//   "<prefix>gpuop-device-plugin_<response_id>" with the same names, comma-separated;
// - envvar: NVIDIA_VISIBLE_DEVICES=<ids> (and NVIDIA_IMEX_CHANNELS);
// - volume-mounts: NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices and /dev/null
//   mounted at <that dir>/<id> for each device (and imex/<channel>);
// - passDeviceSpecs (with a non-CDI strategy): the device nodes and the control nodes that
//   exist, host path under dev_root;
// - NVIDIA_GDS / NVIDIA_MOFED / NVIDIA_GDRCOPY=enabled when set.
// Ids follow the id strategy (UUID or index "0", "0:1"). IMEX channel device nodes are passed
// as device specs whatever the strategy (gpuop's CDI spec has no channel devices). AMD devices
// get their CDI names, or their device nodes under non-CDI strategies.
// `node_exists` answers for control nodes (host paths) under passDeviceSpecs.
v1beta1::ContainerAllocateResponse ContainerResponse(
    const std::vector<const PluginDevice*>& devices, const AllocateSettings& settings,
    const DeviceListStrategies& strategies, const std::string& response_id,
    const std::function<bool(const std::string&)>& node_exists);

// What a container given devices of `resource` shared with MPS also gets, as NVIDIA's plugin
// answers: CUDA_MPS_PIPE_DIRECTORY=/mps/<resource>/pipe, that directory mounted from
// <mps_root>/<resource>/pipe, and <mps_root>/shm mounted at /dev/shm. Under every device list
// strategy (the CDI ones included).
void AddMpsClient(const std::string& resource, const std::string& mps_root,
                  v1beta1::ContainerAllocateResponse& out);

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_DEVICEPLUGIN_ALLOCATE_RESPONSE_H_
