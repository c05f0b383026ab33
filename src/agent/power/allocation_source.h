#ifndef GPUOP_AGENT_POWER_ALLOCATION_SOURCE_H_
#define GPUOP_AGENT_POWER_ALLOCATION_SOURCE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "hw/model.h"

namespace gpuop::agent::power {

// One device a pod's container holds, as the kubelet's PodResources API (List) reports it.
struct DeviceAllocation {
  std::string pod_namespace;
  std::string pod_name;
  std::string container;
  std::string resource;  // "nvidia.com/gpu", "nvidia.com/mig-1g.10gb"
  // The device plugin's device ID: a GPU or MIG UUID (the PCI address for AMD), with "::<n>"
  // for time-slicing replica n.
  std::string device_id;

  std::string pod() const { return pod_namespace + "/" + pod_name; }
  friend bool operator==(const DeviceAllocation&, const DeviceAllocation&) = default;
};

// Which devices pods hold right now. The real implementation is a PodResources client on the
// kubelet's socket; tests use FakeAllocationSource.
class AllocationSource {
 public:
  virtual ~AllocationSource() = default;
  // Every device held by a container of a pod the kubelet runs. Unavailable when the kubelet
  // cannot be asked; callers must then assume every GPU may be allocated.
  [[nodiscard]] virtual absl::StatusOr<std::vector<DeviceAllocation>> Allocations() = 0;
};

// An AllocationSource whose answer the test sets. Thread-safe.
class FakeAllocationSource final : public AllocationSource {
 public:
  [[nodiscard]] absl::StatusOr<std::vector<DeviceAllocation>> Allocations() override;
  void Set(std::vector<DeviceAllocation> allocations);
  // Every call fails with `status` until Set() or Fail(OkStatus()).
  void Fail(absl::Status status);
  int calls() const;

 private:
  mutable absl::Mutex mu_;
  std::vector<DeviceAllocation> allocations_ ABSL_GUARDED_BY(mu_);
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
};

// The index of the GPU a device ID belongs to: its own UUID or PCI address, or one of its MIG
// devices, with any "::<n>" replica suffix ignored. nullopt for IDs of no GPU in `inventory`.
std::optional<int> GpuOfDevice(const hw::Inventory& inventory, const std::string& device_id);

// The share of its GPU one device stands for: 1 for a whole GPU, a MIG device's slices over
// the GPU's (the largest profile's slice count). 0 for an unknown device.
double DeviceShare(const hw::Inventory& inventory, const std::string& device_id);

}  // namespace gpuop::agent::power

#endif  // GPUOP_AGENT_POWER_ALLOCATION_SOURCE_H_
