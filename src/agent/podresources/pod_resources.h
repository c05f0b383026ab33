#ifndef GPUOP_AGENT_PODRESOURCES_POD_RESOURCES_H_
#define GPUOP_AGENT_PODRESOURCES_POD_RESOURCES_H_

#include <compare>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gpuop::agent::podresources {

// A device allocated through DRA: a ResourceClaim's result, as the kubelet reports it
// (ContainerResources.dynamic_resources).
struct DraDevice {
  std::string driver;  // "gpu.nvidia.com"
  std::string pool;    // the driver's pool (NVIDIA's: the node name)
  std::string device;  // "gpu-0", "gpu-0-mig-9-4-4"
  std::string claim_name;
  std::string claim_namespace;

  friend auto operator<=>(const DraDevice&, const DraDevice&) = default;
  friend bool operator==(const DraDevice&, const DraDevice&) = default;
};

// One device a container holds, as the kubelet reports it.
struct PodDevice {
  // "nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "amd.com/gpu"; "" for a DRA device.
  std::string resource;
  // "GPU-…", "MIG-…", "GPU-…::3" (a time-sliced replica), a PCI address; a DRA device's name.
  std::string device_id;
  std::string pod_namespace;
  std::string pod;
  std::string container;
  // The NUMA nodes the kubelet lists for the device (from the plugin's topology); empty when
  // the plugin gave none.
  std::vector<int64_t> numa_nodes;
  std::optional<DraDevice> dra;  // set for a device allocated through DRA

  friend bool operator==(const PodDevice&, const PodDevice&) = default;
};

// Which devices pods hold now. Implementations are thread-safe.
class PodLister {
 public:
  virtual ~PodLister() = default;

  // Every device of every container on the node, in the kubelet's order. Waits at most
  // `timeout`: DeadlineExceeded or Unavailable (kubelet down or restarting) are the normal
  // failures, with a message naming the socket.
  [[nodiscard]] virtual absl::StatusOr<std::vector<PodDevice>> List(absl::Duration timeout) = 0;
};

// The kubelet's PodResources v1 List over its unix socket
// (/var/lib/kubelet/pod-resources/kubelet.sock). One gRPC channel for the lister's lifetime; it
// reconnects by itself after a kubelet restart, retrying at least every 5 s. Devices allocated
// through DRA (dynamic_resources, reported by kubelets with KubeletPodResourcesDynamicResources,
// beta and on from 1.34) come after a container's device-plugin devices, one PodDevice per
// claim result.
std::unique_ptr<PodLister> NewKubeletPodLister(std::filesystem::path socket);

// The kubelet's PodResources v1 GetAllocatableResources on `socket`: the devices its device
// manager holds healthy now (what Node allocatable shows after its next status sync), one
// PodDevice each with only `resource`, `device_id` and `numa_nodes` set. Errors as List's.
[[nodiscard]] absl::StatusOr<std::vector<PodDevice>> ListAllocatableDevices(
    const std::filesystem::path& socket, absl::Duration timeout);

}  // namespace gpuop::agent::podresources

#endif  // GPUOP_AGENT_PODRESOURCES_POD_RESOURCES_H_
