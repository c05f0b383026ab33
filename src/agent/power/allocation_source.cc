#include "agent/power/allocation_source.h"

#include <algorithm>

namespace gpuop::agent::power {
namespace {

std::string WithoutReplica(const std::string& device_id) {
  const size_t suffix = device_id.find("::");
  return suffix == std::string::npos ? device_id : device_id.substr(0, suffix);
}

}  // namespace

absl::StatusOr<std::vector<DeviceAllocation>> FakeAllocationSource::Allocations() {
  absl::MutexLock lock(&mu_);
  ++calls_;
  if (!failure_.ok()) return failure_;
  return allocations_;
}

void FakeAllocationSource::Set(std::vector<DeviceAllocation> allocations) {
  absl::MutexLock lock(&mu_);
  allocations_ = std::move(allocations);
  failure_ = absl::OkStatus();
}

void FakeAllocationSource::Fail(absl::Status status) {
  absl::MutexLock lock(&mu_);
  failure_ = std::move(status);
}

int FakeAllocationSource::calls() const {
  absl::MutexLock lock(&mu_);
  return calls_;
}

std::optional<int> GpuOfDevice(const hw::Inventory& inventory, const std::string& device_id) {
  const std::string id = WithoutReplica(device_id);
  for (const hw::Gpu& gpu : inventory.gpus) {
    if (gpu.uuid == id || (!gpu.pci_bus_id.empty() && gpu.pci_bus_id == id)) return gpu.index;
    for (const hw::MigDevice& mig : gpu.mig_devices) {
      if (mig.uuid == id) return gpu.index;
    }
  }
  return std::nullopt;
}

double DeviceShare(const hw::Inventory& inventory, const std::string& device_id) {
  const std::string id = WithoutReplica(device_id);
  for (const hw::Gpu& gpu : inventory.gpus) {
    if (gpu.uuid == id || (!gpu.pci_bus_id.empty() && gpu.pci_bus_id == id)) return 1;
    for (const hw::MigDevice& mig : gpu.mig_devices) {
      if (mig.uuid != id) continue;
      unsigned int gpu_slices = 0;
      unsigned int slices = 0;
      for (const hw::MigProfile& p : gpu.mig_profiles) {
        gpu_slices = std::max(gpu_slices, p.slice_count);
        if (p.name == mig.profile) slices = p.slice_count;
      }
      if (gpu_slices == 0 || slices == 0) return 1.0 / static_cast<double>(gpu.mig_devices.size());
      return static_cast<double>(slices) / static_cast<double>(gpu_slices);
    }
  }
  return 0;
}

}  // namespace gpuop::agent::power
