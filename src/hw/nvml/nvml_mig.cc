// NvmlAccelerator: MIG discovery and reconfiguration.
#include <cstring>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "hw/mig_profile.h"
#include "hw/nvml/nvml_accelerator.h"

namespace gpuop::hw {
namespace {

// NVML names profiles "MIG 1g.10gb"; the resource and label names use "1g.10gb".
std::string ProfileName(const char* name) {
  absl::string_view view(name, strnlen(name, 96));
  absl::ConsumePrefix(&view, "MIG ");
  return std::string(view);
}

}  // namespace

void NvmlAccelerator::DescribeMig(nvmlDevice_t device, Gpu& gpu) const {
  const NvmlFunctions& f = lib_->fn();
  if (f.nvmlDeviceGetMigMode == nullptr) return;
  unsigned int current = 0, pending = 0;
  calls_.fetch_add(1, std::memory_order_relaxed);
  if (f.nvmlDeviceGetMigMode(device, &current, &pending) != NVML_SUCCESS) return;
  gpu.mig_capable = true;
  gpu.mig_enabled = current == NVML_DEVICE_MIG_ENABLE;
  gpu.mig_pending_change = current != pending;

  gpu.mig_profiles = MigProfiles(device);
  std::map<unsigned int, std::string> names_by_id;
  for (const MigProfile& profile : gpu.mig_profiles) names_by_id[profile.id] = profile.name;
  if (!gpu.mig_enabled || f.nvmlDeviceGetMaxMigDeviceCount == nullptr ||
      f.nvmlDeviceGetMigDeviceHandleByIndex == nullptr) {
    return;
  }
  unsigned int max = 0;
  calls_.fetch_add(1, std::memory_order_relaxed);
  if (f.nvmlDeviceGetMaxMigDeviceCount(device, &max) != NVML_SUCCESS) return;
  for (unsigned int i = 0; i < max; ++i) {
    nvmlDevice_t mig = nullptr;
    calls_.fetch_add(1, std::memory_order_relaxed);
    if (f.nvmlDeviceGetMigDeviceHandleByIndex(device, i, &mig) != NVML_SUCCESS) continue;
    MigDevice m;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {0};
    if (f.nvmlDeviceGetUUID(mig, uuid, sizeof(uuid)) == NVML_SUCCESS) {
      m.uuid = std::string(uuid, strnlen(uuid, sizeof(uuid)));
    }
    if (auto gi = Optional<unsigned int>(f.nvmlDeviceGetGpuInstanceId, nullptr, mig)) {
      m.gpu_instance_id = *gi;
    }
    if (auto ci = Optional<unsigned int>(f.nvmlDeviceGetComputeInstanceId, nullptr, mig)) {
      m.compute_instance_id = *ci;
    }
    if (auto mem = Optional<nvmlMemory_t>(f.nvmlDeviceGetMemoryInfo, nullptr, mig)) {
      m.memory_bytes = mem->total;
    }
    if (auto attributes =
            Optional<nvmlDeviceAttributes_t>(f.nvmlDeviceGetAttributes_v2, nullptr, mig)) {
      m.has_attributes = true;
      m.multiprocessor_count = attributes->multiprocessorCount;
      m.gpu_instance_slices = attributes->gpuInstanceSliceCount;
      m.compute_instance_slices = attributes->computeInstanceSliceCount;
      m.copy_engines = attributes->sharedCopyEngineCount;
      m.decoders = attributes->sharedDecoderCount;
      m.encoders = attributes->sharedEncoderCount;
      m.jpeg_engines = attributes->sharedJpegCount;
      m.ofa_engines = attributes->sharedOfaCount;
      if (m.memory_bytes == 0) m.memory_bytes = attributes->memorySizeMB << 20;
    }
    nvmlGpuInstance_t gi = nullptr;
    const nvmlReturn_t found = f.nvmlDeviceGetGpuInstanceById == nullptr
                                   ? NVML_ERROR_FUNCTION_NOT_FOUND
                                   : f.nvmlDeviceGetGpuInstanceById(device, m.gpu_instance_id, &gi);
    if (found == NVML_ERROR_NO_PERMISSION) {
      gpu.mig_unreadable =
          "nvmlDeviceGetGpuInstanceById: no permission (the process lacks the MIG monitor "
          "capability, /dev/nvidia-caps/nvidia-cap2: NVIDIA's components run with SYS_ADMIN and "
          "NVIDIA_MIG_MONITOR_DEVICES=all)";
    }
    if (found == NVML_SUCCESS && f.nvmlGpuInstanceGetInfo != nullptr) {
      nvmlGpuInstanceInfo_t info{};
      calls_.fetch_add(2, std::memory_order_relaxed);
      if (f.nvmlGpuInstanceGetInfo(gi, &info) == NVML_SUCCESS) {
        m.placement_start = info.placement.start;
        m.placement_size = info.placement.size;
        if (auto it = names_by_id.find(info.profileId); it != names_by_id.end()) {
          m.profile = it->second;
        }
      }
    }
    gpu.mig_devices.push_back(std::move(m));
  }
}

absl::StatusOr<bool> NvmlAccelerator::SetMigMode(int gpu_index, bool enabled) {
  GPUOP_ASSIGN_OR_RETURN(nvmlDevice_t device, Handle(gpu_index));
  nvmlReturn_t activation = NVML_SUCCESS;
  GPUOP_RETURN_IF_ERROR(Call(lib_->fn().nvmlDeviceSetMigMode, "nvmlDeviceSetMigMode", gpu_index,
                             device,
                             enabled ? static_cast<unsigned int>(NVML_DEVICE_MIG_ENABLE)
                                     : static_cast<unsigned int>(NVML_DEVICE_MIG_DISABLE),
                             &activation));
  // The mode is recorded; it applies at the next GPU reset when the GPU is busy.
  return activation == NVML_ERROR_IN_USE || activation == NVML_ERROR_RESET_REQUIRED;
}

std::vector<MigProfile> NvmlAccelerator::MigProfiles(nvmlDevice_t device) const {
  const NvmlFunctions& f = lib_->fn();
  std::vector<MigProfile> profiles;
  if (f.nvmlDeviceGetGpuInstanceProfileInfoV == nullptr) return profiles;
  // Profiles by index until the library says there are no more; NOT_SUPPORTED skips one.
  for (unsigned int index = 0; index < NVML_GPU_INSTANCE_PROFILE_COUNT; ++index) {
    nvmlGpuInstanceProfileInfo_v2_t info{};
    info.version = nvmlGpuInstanceProfileInfo_v2;
    calls_.fetch_add(1, std::memory_order_relaxed);
    const nvmlReturn_t rc = f.nvmlDeviceGetGpuInstanceProfileInfoV(device, index, &info);
    if (rc == NVML_ERROR_INVALID_ARGUMENT) break;
    if (rc != NVML_SUCCESS) continue;
    profiles.push_back({.name = ProfileName(info.name),
                        .id = info.id,
                        .slice_count = info.sliceCount,
                        .instance_count = info.instanceCount,
                        .memory_bytes = info.memorySizeMB * 1024ULL * 1024ULL});
  }
  return profiles;
}

absl::StatusOr<unsigned int> NvmlAccelerator::ProfileIdByName(nvmlDevice_t device, int gpu_index,
                                                              const std::string& profile) const {
  std::vector<std::string> known;
  for (const MigProfile& p : MigProfiles(device)) {
    if (p.name == profile) return p.id;
    known.push_back(p.name);
  }
  return absl::InvalidArgumentError(absl::StrCat("MIG profile \"", profile,
                                                 "\" is not offered by GPU ", gpu_index,
                                                 " (offered: ", absl::StrJoin(known, ", "), ")"));
}

absl::StatusOr<MigDevice> NvmlAccelerator::CreateMigDevice(int gpu_index,
                                                           const std::string& profile) {
  const NvmlFunctions& f = lib_->fn();
  GPUOP_ASSIGN_OR_RETURN(nvmlDevice_t device, Handle(gpu_index));
  const MigProfileName name = ParseMigProfileName(profile);
  GPUOP_ASSIGN_OR_RETURN(unsigned int profile_id,
                         ProfileIdByName(device, gpu_index, name.gpu_instance));
  nvmlGpuInstance_t gi = nullptr;
  GPUOP_RETURN_IF_ERROR(Call(f.nvmlDeviceCreateGpuInstance, "nvmlDeviceCreateGpuInstance",
                             gpu_index, device, profile_id, &gi));
  nvmlGpuInstanceInfo_t gi_info{};
  GPUOP_RETURN_IF_ERROR(
      Call(f.nvmlGpuInstanceGetInfo, "nvmlGpuInstanceGetInfo", gpu_index, gi, &gi_info));

  // One compute instance: of the slices the profile names ("1c.3g.20gb"), else spanning the
  // whole GPU instance (the largest compute profile that fits).
  std::optional<unsigned int> ci_profile;
  unsigned int best_slices = 0;
  for (unsigned int index = 0; index < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; ++index) {
    if (f.nvmlGpuInstanceGetComputeInstanceProfileInfoV == nullptr) break;
    nvmlComputeInstanceProfileInfo_v2_t info{};
    info.version = nvmlComputeInstanceProfileInfo_v2;
    calls_.fetch_add(1, std::memory_order_relaxed);
    const nvmlReturn_t rc = f.nvmlGpuInstanceGetComputeInstanceProfileInfoV(
        gi, index, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info);
    if (rc == NVML_ERROR_INVALID_ARGUMENT) break;
    if (rc != NVML_SUCCESS || info.instanceCount == 0) continue;
    if (name.compute_slices.has_value()) {
      if (info.sliceCount == *name.compute_slices) ci_profile = info.id;
    } else if (info.sliceCount > best_slices) {
      best_slices = info.sliceCount;
      ci_profile = info.id;
    }
  }
  absl::Status created =
      ci_profile.has_value()
          ? absl::OkStatus()
          : absl::FailedPreconditionError(
                absl::StrCat("GPU ", gpu_index, ": no compute-instance profile fits ", profile));
  nvmlComputeInstance_t ci = nullptr;
  if (created.ok()) {
    created = Call(f.nvmlGpuInstanceCreateComputeInstance, "nvmlGpuInstanceCreateComputeInstance",
                   gpu_index, gi, *ci_profile, &ci);
  }
  if (!created.ok()) {
    // Leave no empty GPU instance behind.
    (void)Call(f.nvmlGpuInstanceDestroy, "nvmlGpuInstanceDestroy", gpu_index, gi);
    return created;
  }
  GPUOP_ASSIGN_OR_RETURN(Inventory inventory, Discover());
  for (const Gpu& gpu : inventory.gpus) {
    if (gpu.index != gpu_index) continue;
    for (const MigDevice& m : gpu.mig_devices) {
      if (m.gpu_instance_id == gi_info.id) return m;
    }
  }
  return absl::InternalError(absl::StrCat("GPU ", gpu_index, ": created GPU instance ", gi_info.id,
                                          " but no MIG device reports it"));
}

absl::Status NvmlAccelerator::DestroyMigDevice(int gpu_index, unsigned int gpu_instance_id) {
  const NvmlFunctions& f = lib_->fn();
  GPUOP_ASSIGN_OR_RETURN(nvmlDevice_t device, Handle(gpu_index));
  nvmlGpuInstance_t gi = nullptr;
  GPUOP_RETURN_IF_ERROR(Call(f.nvmlDeviceGetGpuInstanceById, "nvmlDeviceGetGpuInstanceById",
                             gpu_index, device, gpu_instance_id, &gi));
  // Compute instances first: a GPU instance that still has some is IN_USE.
  for (unsigned int index = 0; index < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; ++index) {
    if (f.nvmlGpuInstanceGetComputeInstanceProfileInfoV == nullptr) break;
    nvmlComputeInstanceProfileInfo_v2_t info{};
    info.version = nvmlComputeInstanceProfileInfo_v2;
    const nvmlReturn_t rc = f.nvmlGpuInstanceGetComputeInstanceProfileInfoV(
        gi, index, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info);
    if (rc == NVML_ERROR_INVALID_ARGUMENT) break;
    if (rc != NVML_SUCCESS) continue;
    nvmlComputeInstance_t cis[8];
    unsigned int count = 8;
    if (f.nvmlGpuInstanceGetComputeInstances(gi, info.id, cis, &count) != NVML_SUCCESS) continue;
    for (unsigned int i = 0; i < count; ++i) {
      GPUOP_RETURN_IF_ERROR(
          Call(f.nvmlComputeInstanceDestroy, "nvmlComputeInstanceDestroy", gpu_index, cis[i]));
    }
  }
  return Call(f.nvmlGpuInstanceDestroy, "nvmlGpuInstanceDestroy", gpu_index, gi);
}

}  // namespace gpuop::hw
