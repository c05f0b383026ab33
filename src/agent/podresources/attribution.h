#ifndef GPUOP_AGENT_PODRESOURCES_ATTRIBUTION_H_
#define GPUOP_AGENT_PODRESOURCES_ATTRIBUTION_H_

#include <compare>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "agent/podresources/pod_resources.h"
#include "hw/model.h"

namespace gpuop::agent::podresources {

// A container that holds a device.
struct Holder {
  std::string pod_namespace;
  std::string pod;
  std::string container;
  // The ResourceClaim result, for a device allocated through DRA (dcgm-exporter labels series
  // with it: dra_claim_name, dra_claim_namespace, dra_device_name, dra_driver_name,
  // dra_pool_name).
  std::optional<DraDevice> dra;

  friend auto operator<=>(const Holder&, const Holder&) = default;
  friend bool operator==(const Holder&, const Holder&) = default;
};

// Who holds what on one GPU. Holder lists are sorted and without duplicates.
struct GpuHolders {
  // Containers holding the whole GPU or one of its time-sliced replicas ("<uuid>::<n>"). A
  // container holding several replicas of the GPU appears once.
  std::vector<Holder> gpu;
  // Containers holding a MIG device, by the GPU-instance id of that device. MIG devices are
  // compute instances; all compute instances of one GPU instance share its memory, which is
  // what the per-instance series describe, so their holders are merged per GPU instance.
  std::map<unsigned int, std::vector<Holder>> instances;
};

// The device-to-pod mapping of a node at one moment.
struct Attribution {
  std::map<std::string, GpuHolders> by_gpu;  // by GPU UUID; GPUs nobody holds are absent
  // Device IDs of accelerator resources that match no GPU or MIG device of the inventory: a
  // MIG layout or driver changed since the inventory was taken.
  int unknown_devices = 0;
  // Holders left out because a device already had `max_holders_per_device`.
  int dropped_holders = 0;
};

struct AttributionOptions {
  // Resources whose devices are accelerators; devices of other resources (NICs, FPGAs) are
  // ignored even where an ID looks like a PCI address.
  std::vector<std::string> resource_prefixes = {"nvidia.com/", "amd.com/"};
  // DRA drivers whose devices are GPUs, named as NVIDIA's DRA driver names them (below);
  // devices of other drivers are ignored.
  std::vector<std::string> dra_gpu_drivers = {"gpu.nvidia.com"};
  // Bound on the pod labels one device can add: time-slicing rarely offers more than a few
  // dozen replicas, and every holder multiplies the GPU's series.
  size_t max_holders_per_device = 64;
};

// Maps the devices pods hold onto the GPUs and MIG instances of `inventories`. A device ID is a
// GPU UUID (AMD: the id in hw::Gpu::uuid), a MIG UUID, or either with "::<n>" for a
// time-sliced replica. A DRA device of NVIDIA's DRA driver is named after its GPU's minor
// number: "gpu-<minor>" for the whole GPU, "gpu-<minor>-mig-<profile id>-<start>-<size>" or
// "gpu-<minor>-mig-<profile>-<profile id>-<start>" for a MIG device (releases differ), which maps
// to the GPU instance at that placement start; a MIG name whose placement cannot be read holds
// the GPU as a whole.
Attribution Attribute(const std::vector<const hw::Inventory*>& inventories,
                      const std::vector<PodDevice>& devices,
                      const AttributionOptions& options = {});

// The device ID without a time-slicing replica suffix: "GPU-x::3" -> "GPU-x".
absl::string_view PhysicalDeviceId(absl::string_view device_id);

// How a GPU's energy over an interval is charged to the containers holding it; the fractions
// sum to at most 1 and the rest is charged to nobody (an idle GPU or idle MIG slices):
//  - a GPU without MIG: split evenly among its holders (time-sliced replicas share the GPU's
//    time equally between the pods, however many replicas each holds);
//  - a GPU with MIG: each GPU instance that someone holds gets its compute slices' share of the
//    GPU (a 3g instance 3/7 on a 7-slice GPU; where the profile is unknown, an equal share per
//    GPU instance), split evenly among the holders of that instance.
// A container holding several instances gets the sum. Sorted by holder.
std::vector<std::pair<Holder, double>> EnergyShares(const hw::Gpu& gpu, const GpuHolders& holders);

}  // namespace gpuop::agent::podresources

#endif  // GPUOP_AGENT_PODRESOURCES_ATTRIBUTION_H_
