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

// Adds a GPU instance with this placement and id, checking nothing.
nvmlGpuInstance_st* InsertGpuInstance(GpuState& gpu, const GiProfile& profile, unsigned int start,
                                      unsigned int id, HandleRegistry& handles) {
  auto instance = std::make_unique<nvmlGpuInstance_st>();
  instance->gpu = &gpu;
  instance->profile = &profile;
  instance->start = start;
  instance->id = id;
  nvmlGpuInstance_st* added = instance.get();
  handles.gpu_instances.insert(added);
  const auto at =
      std::lower_bound(gpu.gpu_instances.begin(), gpu.gpu_instances.end(), id,
                       [](const auto& gi, unsigned int value) { return gi->id < value; });
  gpu.gpu_instances.insert(at, std::move(instance));
  return added;
}

// Adds a compute instance with this placement and id, checking nothing.
nvmlComputeInstance_st* InsertComputeInstance(nvmlGpuInstance_st& instance, unsigned int slices,
                                              unsigned int start, unsigned int id,
                                              HandleRegistry& handles) {
  auto compute = std::make_unique<nvmlComputeInstance_st>();
  compute->gpu_instance = &instance;
  compute->slices = slices;
  compute->start = start;
  compute->id = id;
  GpuState& gpu = *instance.gpu;
  compute->uuid = absl::StrCat(
      "MIG-", DerivedUuid(absl::StrCat(gpu.spec.uuid, "/", instance.id, "/", compute->id)));
  compute->device.gpu = &gpu;
  compute->device.compute = compute.get();
  nvmlComputeInstance_st* added = compute.get();
  handles.compute_instances.insert(added);
  handles.devices.insert(&added->device);
  auto& list = instance.computes;
  const auto at =
      std::lower_bound(list.begin(), list.end(), id,
                       [](const auto& ci, unsigned int value) { return ci->id < value; });
  list.insert(at, std::move(compute));
  return added;
}

// Removes a compute instance and its MIG device, processes or not.
void DropComputeInstance(nvmlComputeInstance_st& compute, HandleRegistry& handles) {
  handles.compute_instances.erase(&compute);
  handles.devices.erase(&compute.device);
  auto& list = compute.gpu_instance->computes;
  const auto at =
      std::find_if(list.begin(), list.end(), [&](const auto& ci) { return ci.get() == &compute; });
  handles.retired_compute_instances.push_back(std::move(*at));
  list.erase(at);
}

// Removes a GPU instance with its compute instances.
void DropGpuInstance(nvmlGpuInstance_st& instance, HandleRegistry& handles) {
  while (!instance.computes.empty()) DropComputeInstance(*instance.computes.back(), handles);
  auto& list = instance.gpu->gpu_instances;
  handles.gpu_instances.erase(&instance);
  const auto at =
      std::find_if(list.begin(), list.end(), [&](const auto& gi) { return gi.get() == &instance; });
  handles.retired_gpu_instances.push_back(std::move(*at));
  list.erase(at);
}

// Whether `record` fits the GPU's MIG table: known profiles, their placements, no overlaps,
// compute instances the GPU instance offers at aligned starts.
absl::Status CheckMigRecord(const GpuState& gpu, const GpuMigRecord& record) {
  if (!gpu.spec.mig) {
    if (record.current || record.pending || !record.instances.empty()) {
      return absl::InvalidArgumentError("the GPU is not MIG-capable");
    }
    return absl::OkStatus();
  }
  if (!record.current && !record.instances.empty()) {
    return absl::InvalidArgumentError("GPU instances with MIG mode disabled");
  }
  uint64_t occupied = 0;
  for (const GpuInstanceRecord& gi : record.instances) {
    const std::string what = absl::StrCat("GPU instance ", gi.id);
    const GiProfile* profile = FindGiProfileById(gpu, gi.profile_id);
    if (profile == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": no profile id ", gi.profile_id));
    }
    const auto& starts = profile->placement_starts;
    if (std::find(starts.begin(), starts.end(), gi.start) == starts.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": ", gi.start, " is not a placement of ", profile->name));
    }
    const uint64_t mask = SlotMask(gi.start, profile->placement_size);
    if ((occupied & mask) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": overlaps another"));
    }
    occupied |= mask;
    uint64_t slices_taken = 0;
    for (const ComputeInstanceRecord& ci : gi.computes) {
      const auto& offered = profile->compute_slices;
      if (std::find(offered.begin(), offered.end(), ci.slices) == offered.end() ||
          ci.start % std::bit_ceil(ci.slices) != 0 || ci.start + ci.slices > profile->slices) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": compute instance ", ci.id, " (",
                                                       ci.slices, " slices at ", ci.start,
                                                       ") does not fit ", profile->name));
      }
      const uint64_t ci_mask = SlotMask(ci.start, ci.slices);
      if ((slices_taken & ci_mask) != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": compute instance ", ci.id, " overlaps another"));
      }
      slices_taken |= ci_mask;
    }
  }
  return absl::OkStatus();
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
  *out = InsertGpuInstance(gpu, profile, *start, GpuInstanceId(gpu, *start, profile.placement_size),
                           handles);
  return NVML_SUCCESS;
}

nvmlReturn_t DestroyGpuInstance(nvmlGpuInstance_st& instance, HandleRegistry& handles) {
  if (!instance.computes.empty()) return NVML_ERROR_IN_USE;
  DropGpuInstance(instance, handles);
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
  const auto& list = instance.computes;
  unsigned int id = 0;
  while (std::any_of(list.begin(), list.end(), [&](const auto& ci) { return ci->id == id; })) {
    ++id;
  }
  *out = InsertComputeInstance(instance, slices, *start, id, handles);
  return NVML_SUCCESS;
}

nvmlReturn_t DestroyComputeInstance(nvmlComputeInstance_st& compute, HandleRegistry& handles) {
  nvmlGpuInstance_st& instance = *compute.gpu_instance;
  if (HasProcesses(*instance.gpu, instance.id, compute.id)) return NVML_ERROR_IN_USE;
  DropComputeInstance(compute, handles);
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

void DestroyAllInstances(GpuState& gpu, HandleRegistry& handles) {
  while (!gpu.gpu_instances.empty()) DropGpuInstance(*gpu.gpu_instances.back(), handles);
}

GpuMigRecord MigRecordOf(const GpuState& gpu) {
  GpuMigRecord record{.current = gpu.mig_enabled, .pending = gpu.mig_pending};
  for (const auto& instance : gpu.gpu_instances) {
    GpuInstanceRecord gi{
        .id = instance->id, .profile_id = instance->profile->id, .start = instance->start};
    for (const auto& compute : instance->computes) {
      gi.computes.push_back(
          {.id = compute->id, .slices = compute->slices, .start = compute->start});
    }
    record.instances.push_back(std::move(gi));
  }
  return record;
}

absl::Status AdoptMigRecord(GpuState& gpu, const GpuMigRecord& record, HandleRegistry& handles) {
  if (absl::Status fits = CheckMigRecord(gpu, record); !fits.ok()) return fits;
  gpu.mig_enabled = record.current;
  gpu.mig_pending = record.pending;
  auto find_gi = [&](unsigned int id) {
    const auto found = std::find_if(record.instances.begin(), record.instances.end(),
                                    [&](const GpuInstanceRecord& gi) { return gi.id == id; });
    return found == record.instances.end() ? nullptr : &*found;
  };
  // Instances that changed or went away: gone here too.
  std::vector<nvmlGpuInstance_st*> existing;
  for (const auto& instance : gpu.gpu_instances) existing.push_back(instance.get());
  for (nvmlGpuInstance_st* instance : existing) {
    const GpuInstanceRecord* kept = find_gi(instance->id);
    if (kept == nullptr || kept->profile_id != instance->profile->id ||
        kept->start != instance->start) {
      DropGpuInstance(*instance, handles);
      continue;
    }
    std::vector<nvmlComputeInstance_st*> computes;
    for (const auto& compute : instance->computes) computes.push_back(compute.get());
    for (nvmlComputeInstance_st* compute : computes) {
      const ComputeInstanceRecord same{compute->id, compute->slices, compute->start};
      if (std::find(kept->computes.begin(), kept->computes.end(), same) == kept->computes.end()) {
        DropComputeInstance(*compute, handles);
      }
    }
  }
  // New ones, and new compute instances in the instances that stayed.
  for (const GpuInstanceRecord& gi : record.instances) {
    nvmlGpuInstance_st* instance = nullptr;
    for (const auto& live : gpu.gpu_instances) {
      if (live->id == gi.id) instance = live.get();
    }
    if (instance == nullptr) {
      instance =
          InsertGpuInstance(gpu, *FindGiProfileById(gpu, gi.profile_id), gi.start, gi.id, handles);
    }
    for (const ComputeInstanceRecord& ci : gi.computes) {
      const bool present = std::any_of(instance->computes.begin(), instance->computes.end(),
                                       [&](const auto& live) { return live->id == ci.id; });
      if (!present) InsertComputeInstance(*instance, ci.slices, ci.start, ci.id, handles);
    }
  }
  return absl::OkStatus();
}

}  // namespace gpuop::fakenvml
