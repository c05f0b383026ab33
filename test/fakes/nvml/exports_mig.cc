// MIG: mode, profiles, GPU and compute instances, MIG device handles.

#include <algorithm>
#include <cstring>

#include "test/fakes/nvml/exports.h"
#include "test/fakes/nvml/mig.h"

using gpuop::fakenvml::CiRemainingCapacity;
using gpuop::fakenvml::ComputeMultiprocessors;
using gpuop::fakenvml::ComputePlacements;
using gpuop::fakenvml::ComputeProfileForSlices;
using gpuop::fakenvml::ComputeProfileName;
using gpuop::fakenvml::ComputeSlicesForProfile;
using gpuop::fakenvml::CreateComputeInstance;
using gpuop::fakenvml::CreateGpuInstance;
using gpuop::fakenvml::DestroyComputeInstance;
using gpuop::fakenvml::DestroyGpuInstance;
using gpuop::fakenvml::DeviceRef;
using gpuop::fakenvml::Driver;
using gpuop::fakenvml::FindGiProfileById;
using gpuop::fakenvml::FindGiProfileByIndex;
using gpuop::fakenvml::GiProfile;
using gpuop::fakenvml::GiRemainingCapacity;
using gpuop::fakenvml::GpuState;
using gpuop::fakenvml::Machine;
using gpuop::fakenvml::MaxMigDevices;
using gpuop::fakenvml::MigDevices;
using gpuop::fakenvml::OnDevice;
using gpuop::fakenvml::WithDevice;
using gpuop::fakenvml::WithGpu;

namespace {

// nvmlGpuInstanceProfileInfo_v3_t, which the real library also accepts in
// nvmlDeviceGetGpuInstanceProfileInfoV; gpuop itself passes v2.
struct GpuInstanceProfileInfoV3 {
  unsigned int version;
  unsigned int id;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
  char name[96];
  unsigned int capabilities;
};
static_assert(sizeof(GpuInstanceProfileInfoV3) == 152);
constexpr unsigned int kGpuInstanceProfileInfoV3 =
    NvmlStructVersion(sizeof(GpuInstanceProfileInfoV3), 3);
static_assert(kGpuInstanceProfileInfoV3 == 0x03000098u);

template <size_t N>
void CopyName(const std::string& value, char (&out)[N]) {
  std::memset(out, 0, N);
  value.copy(out, std::min(value.size(), N - 1));
}

// Fills a v2 or v3 GPU-instance profile info struct, keeping its version.
template <typename Info>
void FillGiProfileInfo(const GiProfile& profile, Info& info) {
  const unsigned int version = info.version;
  info = Info{};
  info.version = version;
  info.id = profile.id;
  info.sliceCount = profile.slices;
  info.instanceCount = profile.instances;
  info.multiprocessorCount = profile.multiprocessors;
  info.copyEngineCount = profile.copy_engines;
  info.decoderCount = profile.decoders;
  info.encoderCount = profile.encoders;
  info.jpegCount = profile.jpegs;
  info.ofaCount = profile.ofas;
  info.memorySizeMB = profile.memory_mib;
  CopyName("MIG " + profile.name, info.name);
}

// Runs fn(Machine&, GpuState&) for a MIG-capable GPU; NOT_SUPPORTED otherwise, and also when MIG
// mode is off unless `any_mode`.
template <typename Fn>
nvmlReturn_t WithMigGpu(nvmlDevice_t device, bool any_mode, Fn&& fn,
                        std::source_location where = std::source_location::current()) {
  return WithGpu(
      device,
      [&](Machine& machine, GpuState& gpu) -> nvmlReturn_t {
        if (!gpu.spec.mig || (!any_mode && !gpu.mig_enabled)) return NVML_ERROR_NOT_SUPPORTED;
        return fn(machine, gpu);
      },
      where);
}

// As WithMigGpu, for a call that changes MIG state: it runs on the node's MIG state
// (Driver::RunMigChange), and a handle another process's change made stale is INVALID_ARGUMENT.
template <typename Fn>
nvmlReturn_t ChangeMigGpu(nvmlDevice_t device, bool any_mode, Fn&& fn,
                          std::source_location where = std::source_location::current()) {
  return Driver::Get().RunMigChange([&](Machine& machine) {
    return OnDevice(
        machine, device,
        [&](Machine& m, const DeviceRef& ref) -> nvmlReturn_t {
          GpuState& gpu = *ref.gpu;
          if (ref.is_mig() || !gpu.spec.mig || (!any_mode && !gpu.mig_enabled)) {
            return NVML_ERROR_NOT_SUPPORTED;
          }
          return fn(m, gpu);
        },
        where);
  });
}

// Runs fn(Machine&, nvmlGpuInstance_st&) for a live GPU instance.
template <typename Fn>
nvmlReturn_t WithGpuInstance(nvmlGpuInstance_t instance, Fn&& fn) {
  return Driver::Get().Run([&](Machine& machine) -> nvmlReturn_t {
    nvmlGpuInstance_st* live = nullptr;
    if (const nvmlReturn_t result = machine.ResolveGpuInstance(instance, &live);
        result != NVML_SUCCESS) {
      return result;
    }
    return fn(machine, *live);
  });
}

// As WithGpuInstance, for a call that changes MIG state (ChangeMigGpu).
template <typename Fn>
nvmlReturn_t ChangeMigGpuInstance(nvmlGpuInstance_t instance, Fn&& fn) {
  return Driver::Get().RunMigChange([&](Machine& machine) -> nvmlReturn_t {
    nvmlGpuInstance_st* live = nullptr;
    if (const nvmlReturn_t result = machine.ResolveGpuInstance(instance, &live);
        result != NVML_SUCCESS) {
      return result;
    }
    return fn(machine, *live);
  });
}

// The compute-instance size of profile id `profile` if the GPU instance offers it.
std::optional<unsigned int> OfferedSlices(const nvmlGpuInstance_st& instance,
                                          unsigned int profile) {
  const std::optional<unsigned int> slices = ComputeSlicesForProfile(profile);
  const auto& offered = instance.profile->compute_slices;
  if (!slices || std::find(offered.begin(), offered.end(), *slices) == offered.end()) {
    return std::nullopt;
  }
  return slices;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current,
                                  unsigned int* pending) {
  return WithMigGpu(device, true, [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
    if (current == nullptr || pending == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *current = gpu.mig_enabled ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    *pending = gpu.mig_pending ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode,
                                  nvmlReturn_t* activation) {
  // Pending while the GPU is in use or cannot be reset (Machine::SetMigMode). Disabling with GPU
  // instances left is refused, as nvidia-smi refuses it.
  return ChangeMigGpu(device, true, [&](Machine& machine, GpuState& gpu) -> nvmlReturn_t {
    if (activation == nullptr || mode > NVML_DEVICE_MIG_ENABLE) return NVML_ERROR_INVALID_ARGUMENT;
    if (const nvmlReturn_t denied = machine.NeedMigConfig(); denied != NVML_SUCCESS) return denied;
    return machine.SetMigMode(gpu, mode == NVML_DEVICE_MIG_ENABLE, activation);
  });
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
  return WithMigGpu(device, true, [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *count = MaxMigDevices(gpu);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                 nvmlDevice_t* mig_device) {
  return WithMigGpu(device, true, [&](Machine& machine, GpuState& gpu) -> nvmlReturn_t {
    if (mig_device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const std::vector<nvmlComputeInstance_st*> devices = machine.VisibleMigDevices(gpu);
    if (index >= devices.size()) return NVML_ERROR_NOT_FOUND;
    *mig_device = &devices[index]->device;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t mig_device,
                                                          nvmlDevice_t* device) {
  return WithDevice(mig_device, [&](Machine&, const DeviceRef& ref) -> nvmlReturn_t {
    if (device == nullptr || !ref.is_mig()) return NVML_ERROR_INVALID_ARGUMENT;
    *device = &ref.gpu->handle;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int* is_mig) {
  return WithDevice(device, [&](Machine&, const DeviceRef& ref) -> nvmlReturn_t {
    if (is_mig == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *is_mig = ref.is_mig() ? 1 : 0;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  return WithDevice(device, [&](Machine&, const DeviceRef& ref) -> nvmlReturn_t {
    if (id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!ref.is_mig()) return NVML_ERROR_NOT_SUPPORTED;
    *id = ref.compute->gpu_instance->id;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id) {
  return WithDevice(device, [&](Machine&, const DeviceRef& ref) -> nvmlReturn_t {
    if (id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!ref.is_mig()) return NVML_ERROR_NOT_SUPPORTED;
    *id = ref.compute->id;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device, unsigned int profile,
                                                  nvmlGpuInstanceProfileInfo_v2_t* info) {
  return WithMigGpu(device, false, [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
    if (info == nullptr || profile >= NVML_GPU_INSTANCE_PROFILE_COUNT) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    // What the real library answers to a version it does not know.
    const unsigned int version = info->version;
    if (version != nvmlGpuInstanceProfileInfo_v2 && version != kGpuInstanceProfileInfoV3) {
      return NVML_ERROR_FUNCTION_NOT_FOUND;
    }
    const GiProfile* p = FindGiProfileByIndex(gpu, profile);
    if (p == nullptr) return NVML_ERROR_NOT_SUPPORTED;
    if (version == kGpuInstanceProfileInfoV3) {
      FillGiProfileInfo(*p, *reinterpret_cast<GpuInstanceProfileInfoV3*>(info));
    } else {
      FillGiProfileInfo(*p, *info);
    }
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t device,
                                                           unsigned int profile_id,
                                                           nvmlGpuInstancePlacement_t* placements,
                                                           unsigned int* count) {
  // Every placement of the profile, occupied or not, in MIG mode or not.
  return WithMigGpu(device, true, [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
    const GiProfile* profile = FindGiProfileById(gpu, profile_id);
    if (count == nullptr || profile == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const auto needed = static_cast<unsigned int>(profile->placement_starts.size());
    if (placements == nullptr) {
      *count = needed;
      return NVML_SUCCESS;
    }
    if (*count < needed) {
      *count = needed;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned int i = 0; i < needed; ++i) {
      placements[i] = {profile->placement_starts[i], profile->placement_size};
    }
    *count = needed;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t device, unsigned int profile_id,
                                                       unsigned int* count) {
  return WithMigGpu(device, false, [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
    const GiProfile* profile = FindGiProfileById(gpu, profile_id);
    if (count == nullptr || profile == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *count = GiRemainingCapacity(gpu, *profile);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t device, unsigned int profile_id,
                                         nvmlGpuInstance_t* instance) {
  return ChangeMigGpu(device, false, [&](Machine& machine, GpuState& gpu) -> nvmlReturn_t {
    const GiProfile* profile = FindGiProfileById(gpu, profile_id);
    if (instance == nullptr || profile == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (const nvmlReturn_t denied = machine.NeedMigConfig(); denied != NVML_SUCCESS) return denied;
    return CreateGpuInstance(gpu, *profile, std::nullopt, machine.handles(), instance);
  });
}

nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t device, unsigned int profile_id,
                                                      const nvmlGpuInstancePlacement_t* placement,
                                                      nvmlGpuInstance_t* instance) {
  return ChangeMigGpu(device, false, [&](Machine& machine, GpuState& gpu) -> nvmlReturn_t {
    const GiProfile* profile = FindGiProfileById(gpu, profile_id);
    if (instance == nullptr || placement == nullptr || profile == nullptr ||
        placement->size != profile->placement_size) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (const nvmlReturn_t denied = machine.NeedMigConfig(); denied != NVML_SUCCESS) return denied;
    return CreateGpuInstance(gpu, *profile, placement->start, machine.handles(), instance);
  });
}

nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t instance) {
  return ChangeMigGpuInstance(instance, [&](Machine& machine, nvmlGpuInstance_st& live) {
    if (const nvmlReturn_t denied = machine.NeedMigConfig(); denied != NVML_SUCCESS) return denied;
    return DestroyGpuInstance(live, machine.handles());
  });
}

nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profile_id,
                                       nvmlGpuInstance_t* instances, unsigned int* count) {
  // `instances` must hold the profile's instance count; `count` is only written.
  return WithMigGpu(device, false, [&](Machine& machine, GpuState& gpu) -> nvmlReturn_t {
    const GiProfile* profile = FindGiProfileById(gpu, profile_id);
    if (instances == nullptr || count == nullptr || profile == nullptr) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (const nvmlReturn_t denied = machine.NeedMigMonitor(); denied != NVML_SUCCESS) return denied;
    unsigned int found = 0;
    for (const auto& instance : gpu.gpu_instances) {
      if (instance->profile == profile) instances[found++] = instance.get();
    }
    *count = found;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id,
                                          nvmlGpuInstance_t* instance) {
  return WithMigGpu(device, false, [&](Machine& machine, GpuState& gpu) -> nvmlReturn_t {
    if (instance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (const nvmlReturn_t denied = machine.NeedMigMonitor(); denied != NVML_SUCCESS) return denied;
    for (const auto& live : gpu.gpu_instances) {
      if (live->id != id) continue;
      *instance = live.get();
      return NVML_SUCCESS;
    }
    return NVML_ERROR_NOT_FOUND;
  });
}

nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t instance, nvmlGpuInstanceInfo_t* info) {
  return WithGpuInstance(instance, [&](Machine& machine, nvmlGpuInstance_st& live) -> nvmlReturn_t {
    if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (const nvmlReturn_t denied = machine.NeedMigMonitor(); denied != NVML_SUCCESS) return denied;
    *info = nvmlGpuInstanceInfo_t{
        &live.gpu->handle, live.id, live.profile->id, {live.start, live.profile->placement_size}};
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfoV(
    nvmlGpuInstance_t instance, unsigned int profile, unsigned int engine_profile,
    nvmlComputeInstanceProfileInfo_v2_t* info) {
  return WithGpuInstance(instance, [&](Machine&, nvmlGpuInstance_st& live) -> nvmlReturn_t {
    if (info == nullptr || profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (info->version != nvmlComputeInstanceProfileInfo_v2) return NVML_ERROR_FUNCTION_NOT_FOUND;
    const std::optional<unsigned int> slices = OfferedSlices(live, profile);
    if (engine_profile != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED || !slices) {
      return NVML_ERROR_NOT_SUPPORTED;
    }
    const GiProfile& gi = *live.profile;
    const unsigned int version = info->version;
    *info = nvmlComputeInstanceProfileInfo_v2_t{};
    info->version = version;
    info->id = profile;
    info->sliceCount = *slices;
    info->instanceCount = static_cast<unsigned int>(ComputePlacements(live, *slices).size());
    info->multiprocessorCount = ComputeMultiprocessors(live, *slices);
    info->sharedCopyEngineCount = gi.copy_engines;
    info->sharedDecoderCount = gi.decoders;
    info->sharedEncoderCount = gi.encoders;
    info->sharedJpegCount = gi.jpegs;
    info->sharedOfaCount = gi.ofas;
    CopyName(ComputeProfileName(live, *slices), info->name);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceRemainingCapacity(nvmlGpuInstance_t instance,
                                                                unsigned int profile_id,
                                                                unsigned int* count) {
  return WithGpuInstance(instance, [&](Machine& machine, nvmlGpuInstance_st& live) -> nvmlReturn_t {
    const std::optional<unsigned int> slices = OfferedSlices(live, profile_id);
    if (count == nullptr || !slices) return NVML_ERROR_INVALID_ARGUMENT;
    if (const nvmlReturn_t denied = machine.NeedMigMonitor(); denied != NVML_SUCCESS) return denied;
    *count = CiRemainingCapacity(live, *slices);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t instance,
                                                  unsigned int profile_id,
                                                  nvmlComputeInstance_t* compute) {
  return ChangeMigGpuInstance(
      instance, [&](Machine& machine, nvmlGpuInstance_st& live) -> nvmlReturn_t {
        const std::optional<unsigned int> slices = OfferedSlices(live, profile_id);
        if (compute == nullptr || !slices) return NVML_ERROR_INVALID_ARGUMENT;
        if (const nvmlReturn_t denied = machine.NeedMigConfig(); denied != NVML_SUCCESS)
          return denied;
        return CreateComputeInstance(live, *slices, machine.handles(), compute);
      });
}

nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t compute) {
  return Driver::Get().RunMigChange([&](Machine& machine) -> nvmlReturn_t {
    nvmlComputeInstance_st* live = nullptr;
    if (const nvmlReturn_t result = machine.ResolveComputeInstance(compute, &live);
        result != NVML_SUCCESS) {
      return result;
    }
    if (const nvmlReturn_t denied = machine.NeedMigConfig(); denied != NVML_SUCCESS) return denied;
    return DestroyComputeInstance(*live, machine.handles());
  });
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t instance, unsigned int profile_id,
                                                nvmlComputeInstance_t* computes,
                                                unsigned int* count) {
  return WithGpuInstance(instance, [&](Machine& machine, nvmlGpuInstance_st& live) -> nvmlReturn_t {
    const std::optional<unsigned int> slices = OfferedSlices(live, profile_id);
    if (computes == nullptr || count == nullptr || !slices) return NVML_ERROR_INVALID_ARGUMENT;
    if (const nvmlReturn_t denied = machine.NeedMigMonitor(); denied != NVML_SUCCESS) return denied;
    unsigned int found = 0;
    for (const auto& compute : live.computes) {
      if (compute->slices == *slices) computes[found++] = compute.get();
    }
    *count = found;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t* attributes) {
  return WithDevice(device, [&](Machine& machine, const DeviceRef& ref) -> nvmlReturn_t {
    if (attributes == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    // nvml.h: "This API currently only supports MIG device handles."
    if (!ref.is_mig()) return NVML_ERROR_NOT_SUPPORTED;
    const nvmlComputeInstance_st& compute = *ref.compute;
    const nvmlGpuInstance_st& instance = *compute.gpu_instance;
    const GiProfile& gi = *instance.profile;
    *attributes = nvmlDeviceAttributes_t{};
    attributes->multiprocessorCount = ComputeMultiprocessors(instance, compute.slices);
    attributes->sharedCopyEngineCount = gi.copy_engines;
    attributes->sharedDecoderCount = gi.decoders;
    attributes->sharedEncoderCount = gi.encoders;
    attributes->sharedJpegCount = gi.jpegs;
    attributes->sharedOfaCount = gi.ofas;
    attributes->gpuInstanceSliceCount = gi.slices;
    attributes->computeInstanceSliceCount = compute.slices;
    attributes->memorySizeMB = machine.Memory(ref).total >> 20;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t compute,
                                           nvmlComputeInstanceInfo_t* info) {
  return Driver::Get().Run([&](Machine& machine) -> nvmlReturn_t {
    nvmlComputeInstance_st* live = nullptr;
    if (const nvmlReturn_t result = machine.ResolveComputeInstance(compute, &live);
        result != NVML_SUCCESS) {
      return result;
    }
    if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (const nvmlReturn_t denied = machine.NeedMigMonitor(); denied != NVML_SUCCESS) return denied;
    nvmlGpuInstance_st& instance = *live->gpu_instance;
    *info = nvmlComputeInstanceInfo_t{&instance.gpu->handle,
                                      &instance,
                                      live->id,
                                      *ComputeProfileForSlices(live->slices),
                                      {live->start, live->slices}};
    return NVML_SUCCESS;
  });
}

nvmlReturn_t gpuop_fake_nvml_reset_gpu(nvmlDevice_t device) {
  return Driver::Get().RunMigChange([&](Machine& machine) -> nvmlReturn_t {
    // Resolve() would refuse a lost GPU, which a reset brings back.
    if (device == nullptr || !machine.handles().devices.contains(device) ||
        device->compute != nullptr) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    return machine.ResetGpu(*device->gpu, {});
  });
}

}  // extern "C"
