// MIG entry points that gpuop does not call but NVIDIA's own NVML consumers do (go-nvml, as the
// device plugin, GPU feature discovery and mig-parted use it: the unversioned profile-info calls
// with the original structs, and a compute instance by id). Without them such a consumer dies on
// a symbol lookup. The profile calls answer what their versioned forms answer.
#include "test/fakes/nvml/exports.h"

using gpuop::fakenvml::Driver;
using gpuop::fakenvml::Machine;

namespace {

// nvml.h's original (unversioned) profile structs.
struct GpuInstanceProfileInfoV1 {
  unsigned int id;
  unsigned int isP2pSupported;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
};
static_assert(sizeof(GpuInstanceProfileInfoV1) == 48);

struct ComputeInstanceProfileInfoV1 {
  unsigned int id;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
};
static_assert(sizeof(ComputeInstanceProfileInfoV1) == 36);

}  // namespace

extern "C" {

GPUOP_FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(
    nvmlDevice_t device, unsigned int profile, GpuInstanceProfileInfoV1* info) {
  if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  nvmlGpuInstanceProfileInfo_v2_t v2 = {};
  v2.version = nvmlGpuInstanceProfileInfo_v2;
  const nvmlReturn_t result = nvmlDeviceGetGpuInstanceProfileInfoV(device, profile, &v2);
  if (result != NVML_SUCCESS) return result;
  *info = GpuInstanceProfileInfoV1{.id = v2.id,
                                   .isP2pSupported = v2.isP2pSupported,
                                   .sliceCount = v2.sliceCount,
                                   .instanceCount = v2.instanceCount,
                                   .multiprocessorCount = v2.multiprocessorCount,
                                   .copyEngineCount = v2.copyEngineCount,
                                   .decoderCount = v2.decoderCount,
                                   .encoderCount = v2.encoderCount,
                                   .jpegCount = v2.jpegCount,
                                   .ofaCount = v2.ofaCount,
                                   .memorySizeMB = v2.memorySizeMB};
  return NVML_SUCCESS;
}

GPUOP_FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(
    nvmlGpuInstance_t instance, unsigned int profile, unsigned int engine_profile,
    ComputeInstanceProfileInfoV1* info) {
  if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  nvmlComputeInstanceProfileInfo_v2_t v2 = {};
  v2.version = nvmlComputeInstanceProfileInfo_v2;
  const nvmlReturn_t result =
      nvmlGpuInstanceGetComputeInstanceProfileInfoV(instance, profile, engine_profile, &v2);
  if (result != NVML_SUCCESS) return result;
  *info = ComputeInstanceProfileInfoV1{.id = v2.id,
                                       .sliceCount = v2.sliceCount,
                                       .instanceCount = v2.instanceCount,
                                       .multiprocessorCount = v2.multiprocessorCount,
                                       .sharedCopyEngineCount = v2.sharedCopyEngineCount,
                                       .sharedDecoderCount = v2.sharedDecoderCount,
                                       .sharedEncoderCount = v2.sharedEncoderCount,
                                       .sharedJpegCount = v2.sharedJpegCount,
                                       .sharedOfaCount = v2.sharedOfaCount};
  return NVML_SUCCESS;
}

// NO_PERMISSION without the MIG monitor capability (as every GPU- and compute-instance query),
// NOT_FOUND when the GPU instance has no compute instance `id`.
GPUOP_FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(
    nvmlGpuInstance_t instance, unsigned int id, nvmlComputeInstance_t* compute) {
  return Driver::Get().Run([&](Machine& machine) -> nvmlReturn_t {
    nvmlGpuInstance_st* live = nullptr;
    if (const nvmlReturn_t result = machine.ResolveGpuInstance(instance, &live);
        result != NVML_SUCCESS) {
      return result;
    }
    if (compute == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (const nvmlReturn_t denied = machine.NeedMigMonitor(); denied != NVML_SUCCESS) return denied;
    for (const auto& candidate : live->computes) {
      if (candidate->id == id) {
        *compute = candidate.get();
        return NVML_SUCCESS;
      }
    }
    return NVML_ERROR_NOT_FOUND;
  });
}

}  // extern "C"
