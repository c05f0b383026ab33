#include "test/fakes/nvml/mig.h"

#include <algorithm>
#include <bit>

#include "absl/strings/str_cat.h"
#include "test/fakes/nvml/ids.h"

namespace gpuop::fakenvml {
namespace {

// Compute-instance profile index -> slices (NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE ... 6_SLICE).
constexpr unsigned int kComputeSlices[] = {1, 2, 3, 4, 7, 8, 6};

uint64_t SlotMask(unsigned int start, unsigned int size) {
  const uint64_t bits = size >= 64 ? ~0ULL : (1ULL << size) - 1;
  return bits << start;
}

uint64_t OccupiedSlots(const GpuState& gpu) {
  uint64_t occupied = 0;
  for (const auto& instance : gpu.gpu_instances) {
    occupied |= SlotMask(instance->start, instance->profile->placement_size);
  }
  return occupied;
}

unsigned int MaxComputeSlices(const GpuState& gpu) {
  unsigned int most = 0;
  for (const GiProfile& profile : gpu.spec.mig->profiles) most = std::max(most, profile.slices);
  return most;
}

unsigned int UsedComputeSlices(const GpuState& gpu) {
  unsigned int used = 0;
  for (const auto& instance : gpu.gpu_instances) used += instance->profile->slices;
  return used;
}

unsigned int CountOf(const GpuState& gpu, const GiProfile& profile) {
  return static_cast<unsigned int>(
      std::count_if(gpu.gpu_instances.begin(), gpu.gpu_instances.end(),
                    [&](const auto& instance) { return instance->profile == &profile; }));
}

// The driver numbers GPU instances by their node in the placement tree.
unsigned int GpuInstanceId(const GpuState& gpu, unsigned int start, unsigned int size) {
  const unsigned int slots = gpu.spec.mig->memory_slots;
  if (std::has_single_bit(slots) && std::has_single_bit(size) && start % size == 0) {
    return slots / size - 1 + start / size;
  }
  unsigned int id = 2 * slots;
  while (std::any_of(gpu.gpu_instances.begin(), gpu.gpu_instances.end(),
                     [&](const auto& instance) { return instance->id == id; })) {
    ++id;
  }
  return id;
}

uint64_t OccupiedComputeSlots(const nvmlGpuInstance_st& instance) {
  uint64_t occupied = 0;
  for (const auto& compute : instance.computes) {
    occupied |= SlotMask(compute->start, compute->slices);
  }
  return occupied;
}

bool HasProcesses(const GpuState& gpu, unsigned int gi, std::optional<unsigned int> ci) {
  return std::any_of(gpu.processes.begin(), gpu.processes.end(), [&](const ProcessSpec& p) {
    return p.gpu_instance == gi && (!ci || p.compute_instance == ci);
  });
}

}  // namespace

const GiProfile* FindGiProfileByIndex(const GpuState& gpu, unsigned int index) {
  if (!gpu.spec.mig) return nullptr;
  for (const GiProfile& profile : gpu.spec.mig->profiles) {
    if (profile.index == index) return &profile;
  }
  return nullptr;
}

const GiProfile* FindGiProfileById(const GpuState& gpu, unsigned int id) {
  if (!gpu.spec.mig) return nullptr;
  for (const GiProfile& profile : gpu.spec.mig->profiles) {
    if (profile.id == id) return &profile;
  }
  return nullptr;
}

std::optional<unsigned int> ComputeSlicesForProfile(unsigned int profile) {
  if (profile >= std::size(kComputeSlices)) return std::nullopt;
  return kComputeSlices[profile];
}

std::optional<unsigned int> ComputeProfileForSlices(unsigned int slices) {
  for (unsigned int i = 0; i < std::size(kComputeSlices); ++i) {
    if (kComputeSlices[i] == slices) return i;
  }
  return std::nullopt;
}

unsigned int MaxMigDevices(const GpuState& gpu) {
  unsigned int most = 0;
  for (const GiProfile& profile : gpu.spec.mig->profiles) {
    most = std::max(most, profile.instances);
  }
  return most;
}

unsigned int GiRemainingCapacity(const GpuState& gpu, const GiProfile& profile) {
  if (!gpu.mig_enabled) return 0;
  const unsigned int existing = CountOf(gpu, profile);
  const unsigned int by_count = existing >= profile.instances ? 0 : profile.instances - existing;
  const unsigned int by_compute = (MaxComputeSlices(gpu) - UsedComputeSlices(gpu)) / profile.slices;
  uint64_t occupied = OccupiedSlots(gpu);
  unsigned int fit = 0;
  for (const unsigned int start : profile.placement_starts) {
    const uint64_t mask = SlotMask(start, profile.placement_size);
    if ((occupied & mask) != 0) continue;
    occupied |= mask;
    ++fit;
  }
  return std::min({by_count, by_compute, fit});
}

nvmlReturn_t CreateGpuInstance(GpuState& gpu, const GiProfile& profile,
                               std::optional<unsigned int> start, HandleRegistry& handles,
                               nvmlGpuInstance_st** out) {
  if (!gpu.mig_enabled) return NVML_ERROR_NOT_SUPPORTED;
  const auto& starts = profile.placement_starts;
  if (start && std::find(starts.begin(), starts.end(), *start) == starts.end()) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (CountOf(gpu, profile) >= profile.instances ||
      UsedComputeSlices(gpu) + profile.slices > MaxComputeSlices(gpu)) {
    return NVML_ERROR_INSUFFICIENT_RESOURCES;
  }
  const uint64_t occupied = OccupiedSlots(gpu);
  auto is_free = [&](unsigned int s) {
    return (occupied & SlotMask(s, profile.placement_size)) == 0;
  };
  if (start && !is_free(*start)) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  if (!start) {
    const auto free = std::find_if(starts.rbegin(), starts.rend(), is_free);
    if (free == starts.rend()) return NVML_ERROR_INSUFFICIENT_RESOURCES;
    start = *free;
  }
  auto instance = std::make_unique<nvmlGpuInstance_st>();
  instance->gpu = &gpu;
  instance->profile = &profile;
  instance->start = *start;
  instance->id = GpuInstanceId(gpu, *start, profile.placement_size);
  handles.gpu_instances.insert(instance.get());
  *out = instance.get();
  const auto at = std::lower_bound(gpu.gpu_instances.begin(), gpu.gpu_instances.end(), instance->id,
                                   [](const auto& gi, unsigned int id) { return gi->id < id; });
  gpu.gpu_instances.insert(at, std::move(instance));
  return NVML_SUCCESS;
}

nvmlReturn_t DestroyGpuInstance(nvmlGpuInstance_st& instance, HandleRegistry& handles) {
  if (!instance.computes.empty()) return NVML_ERROR_IN_USE;
  auto& list = instance.gpu->gpu_instances;
  handles.gpu_instances.erase(&instance);
  list.erase(std::find_if(list.begin(), list.end(),
                          [&](const auto& gi) { return gi.get() == &instance; }));
  return NVML_SUCCESS;
}

std::vector<unsigned int> ComputePlacements(const nvmlGpuInstance_st& instance,
                                            unsigned int slices) {
  std::vector<unsigned int> starts;
  const unsigned int align = std::bit_ceil(slices);
  for (unsigned int start = 0; start + slices <= instance.profile->slices; start += align) {
    starts.push_back(start);
  }
  return starts;
}

unsigned int CiRemainingCapacity(const nvmlGpuInstance_st& instance, unsigned int slices) {
  uint64_t occupied = OccupiedComputeSlots(instance);
  unsigned int fit = 0;
  for (const unsigned int start : ComputePlacements(instance, slices)) {
    const uint64_t mask = SlotMask(start, slices);
    if ((occupied & mask) != 0) continue;
    occupied |= mask;
    ++fit;
  }
  return fit;
}

nvmlReturn_t CreateComputeInstance(nvmlGpuInstance_st& instance, unsigned int slices,
                                   HandleRegistry& handles, nvmlComputeInstance_st** out) {
  const uint64_t occupied = OccupiedComputeSlots(instance);
  std::optional<unsigned int> start;
  for (const unsigned int candidate : ComputePlacements(instance, slices)) {
    if ((occupied & SlotMask(candidate, slices)) == 0) {
      start = candidate;
      break;
    }
  }
  if (!start) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  auto compute = std::make_unique<nvmlComputeInstance_st>();
  compute->gpu_instance = &instance;
  compute->slices = slices;
  compute->start = *start;
  auto& list = instance.computes;
  while (std::any_of(list.begin(), list.end(),
                     [&](const auto& ci) { return ci->id == compute->id; })) {
    ++compute->id;
  }
  GpuState& gpu = *instance.gpu;
  compute->uuid = absl::StrCat(
      "MIG-", DerivedUuid(absl::StrCat(gpu.spec.uuid, "/", instance.id, "/", compute->id)));
  compute->device.gpu = &gpu;
  compute->device.compute = compute.get();
  handles.compute_instances.insert(compute.get());
  handles.devices.insert(&compute->device);
  *out = compute.get();
  const auto at = std::lower_bound(list.begin(), list.end(), compute->id,
                                   [](const auto& ci, unsigned int id) { return ci->id < id; });
  list.insert(at, std::move(compute));
  return NVML_SUCCESS;
}

nvmlReturn_t DestroyComputeInstance(nvmlComputeInstance_st& compute, HandleRegistry& handles) {
  nvmlGpuInstance_st& instance = *compute.gpu_instance;
  if (HasProcesses(*instance.gpu, instance.id, compute.id)) return NVML_ERROR_IN_USE;
  handles.compute_instances.erase(&compute);
  handles.devices.erase(&compute.device);
  auto& list = instance.computes;
  list.erase(
      std::find_if(list.begin(), list.end(), [&](const auto& ci) { return ci.get() == &compute; }));
  return NVML_SUCCESS;
}

std::string ComputeProfileName(const nvmlGpuInstance_st& instance, unsigned int slices) {
  if (slices == instance.profile->slices) return absl::StrCat("MIG ", instance.profile->name);
  return absl::StrCat("MIG ", slices, "c.", instance.profile->name);
}

unsigned int ComputeMultiprocessors(const nvmlGpuInstance_st& instance, unsigned int slices) {
  const GiProfile& profile = *instance.profile;
  if (slices == profile.slices) return profile.multiprocessors;
  const unsigned int per_slice = instance.gpu->spec.mig->sm_per_slice;
  return per_slice != 0 ? slices * per_slice : profile.multiprocessors * slices / profile.slices;
}

std::vector<nvmlComputeInstance_st*> MigDevices(const GpuState& gpu) {
  std::vector<nvmlComputeInstance_st*> devices;
  for (const auto& instance : gpu.gpu_instances) {
    for (const auto& compute : instance->computes) devices.push_back(compute.get());
  }
  return devices;
}

absl::Status CreateInitialInstances(GpuState& gpu, HandleRegistry& handles) {
  for (size_t i = 0; i < gpu.spec.mig_instances.size(); ++i) {
    const MigInstanceSpec& spec = gpu.spec.mig_instances[i];
    const std::string path = absl::StrCat("gpus[", gpu.index, "].mig_instances[", i, "]");
    const GiProfile* profile = nullptr;
    for (const GiProfile& candidate : gpu.spec.mig->profiles) {
      if (candidate.name == spec.profile) profile = &candidate;
    }
    nvmlGpuInstance_st* instance = nullptr;
    if (CreateGpuInstance(gpu, *profile, spec.start, handles, &instance) != NVML_SUCCESS) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": ", spec.profile, spec.start ? absl::StrCat(" at ", *spec.start) : "",
          " does not fit (placements, instance count or compute slices)"));
    }
    for (const unsigned int slices : spec.compute_slices) {
      nvmlComputeInstance_st* compute = nullptr;
      if (CreateComputeInstance(*instance, slices, handles, &compute) != NVML_SUCCESS) {
        return absl::InvalidArgumentError(absl::StrCat(path, ".compute: no room for another ",
                                                       slices, "-slice compute instance"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace gpuop::fakenvml
