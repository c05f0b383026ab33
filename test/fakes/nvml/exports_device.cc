// Identity and memory of a device (a GPU or a MIG device).

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "test/fakes/nvml/exports.h"
#include "test/fakes/nvml/mig.h"

using gpuop::fakenvml::CopyString;
using gpuop::fakenvml::DeviceRef;
using gpuop::fakenvml::GpuState;
using gpuop::fakenvml::Machine;
using gpuop::fakenvml::MemoryUse;
using gpuop::fakenvml::WithDevice;
using gpuop::fakenvml::WithGpu;

namespace {

// nvml.h (memory and running processes): "In MIG mode, if device handle is provided, the API
// returns aggregate information, only if the caller has appropriate privileges." Without the
// MIG monitor capability a MIG-enabled GPU's whole-GPU answer is refused; its MIG devices'
// handles still answer for their own instances.
nvmlReturn_t ParentAggregate(const Machine& machine, const DeviceRef& ref) {
  if (ref.is_mig() || !ref.gpu->mig_enabled) return NVML_SUCCESS;
  return machine.NeedMigMonitor();
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  return WithDevice(device, [&](Machine&, const DeviceRef& ref) {
    return CopyString(ref.is_mig() ? ref.compute->uuid : ref.gpu->spec.uuid, uuid, length);
  });
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  return WithDevice(device, [&](Machine& machine, const DeviceRef& ref) {
    return CopyString(ref.is_mig() ? machine.MigDeviceName(*ref.compute) : ref.gpu->spec.name, name,
                      length);
  });
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  // A MIG device reports its parent's PCI address.
  return WithDevice(device, [&](Machine&, const DeviceRef& ref) -> nvmlReturn_t {
    if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *pci = Machine::PciInfo(*ref.gpu);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  return WithGpu(device, [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
    if (index == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *index = static_cast<unsigned int>(gpu.index);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minor) {
  return WithGpu(device, [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
    if (minor == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *minor = gpu.spec.minor_number;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, nvmlDeviceArchitecture_t* arch) {
  return WithDevice(device, [&](Machine&, const DeviceRef& ref) -> nvmlReturn_t {
    if (arch == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *arch = ref.gpu->spec.architecture;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor) {
  return WithDevice(device, [&](Machine&, const DeviceRef& ref) -> nvmlReturn_t {
    if (major == nullptr || minor == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *major = ref.gpu->spec.compute_major;
    *minor = ref.gpu->spec.compute_minor;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char* serial, unsigned int length) {
  return WithGpu(device, [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
    if (serial == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (gpu.spec.serial.empty()) return NVML_ERROR_NOT_SUPPORTED;
    return CopyString(gpu.spec.serial, serial, length);
  });
}

nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int* node) {
  return WithGpu(device, [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
    if (node == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    // nvml.h: "This only applies to platforms where the GPUs are NUMA nodes"; on x86 the PCI
    // affinity is in sysfs, not here.
    if (!gpu.spec.gpu_numa_node) return NVML_ERROR_NOT_SUPPORTED;
    *node = *gpu.spec.gpu_numa_node;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t device, nvmlGpuFabricInfo_t* info) {
  return WithGpu(device, [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
    if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!gpu.spec.fabric) return NVML_ERROR_NOT_SUPPORTED;
    *info = nvmlGpuFabricInfo_t{};
    std::copy(gpu.spec.fabric->cluster_uuid.begin(), gpu.spec.fabric->cluster_uuid.end(),
              info->clusterUuid);
    info->status = NVML_SUCCESS;
    info->cliqueId = gpu.spec.fabric->clique_id;
    info->state = gpu.spec.fabric->state;
    return NVML_SUCCESS;
  });
}

// The versioned form (what go-nvml's GetGpuFabricInfoV calls): version 2 or 3 of the struct, as
// the caller sets it; the same registration, no degraded health bits, and (version 3) a healthy
// summary once the registration completed.
nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device, nvmlGpuFabricInfoV_t* info) {
  return WithGpu(device, [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
    if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const unsigned int version = info->version;
    if (version != nvmlGpuFabricInfo_v2 && version != nvmlGpuFabricInfo_v3) {
      return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    }
    if (!gpu.spec.fabric) return NVML_ERROR_NOT_SUPPORTED;
    nvmlGpuFabricInfoV_t out{};
    out.version = version;
    std::copy(gpu.spec.fabric->cluster_uuid.begin(), gpu.spec.fabric->cluster_uuid.end(),
              out.clusterUuid);
    out.status = NVML_SUCCESS;
    out.cliqueId = gpu.spec.fabric->clique_id;
    out.state = gpu.spec.fabric->state;
    out.healthMask = 0;
    out.healthSummary = out.state == NVML_GPU_FABRIC_STATE_COMPLETED
                            ? NVML_GPU_FABRIC_HEALTH_SUMMARY_HEALTHY
                            : NVML_GPU_FABRIC_HEALTH_SUMMARY_NOT_SUPPORTED;
    // A version 2 caller's struct ends before healthSummary.
    std::memcpy(info, &out,
                version == nvmlGpuFabricInfo_v2 ? offsetof(nvmlGpuFabricInfoV_t, healthSummary)
                                                : sizeof(out));
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  // The v1 struct counts driver-reserved memory as used.
  return WithDevice(device, [&](Machine& machine, const DeviceRef& ref) -> nvmlReturn_t {
    if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (const nvmlReturn_t denied = ParentAggregate(machine, ref); denied != NVML_SUCCESS) {
      return denied;
    }
    const MemoryUse use = machine.Memory(ref);
    memory->total = use.total;
    memory->used = use.reserved + use.used;
    memory->free = use.total - memory->used;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  return WithDevice(device, [&](Machine& machine, const DeviceRef& ref) -> nvmlReturn_t {
    if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (const nvmlReturn_t denied = ParentAggregate(machine, ref); denied != NVML_SUCCESS) {
      return denied;
    }
    // What the real library answers to a version that is not NVML_STRUCT_VERSION(Memory, 2).
    if (memory->version != nvmlMemory_v2) return NVML_ERROR_FUNCTION_NOT_FOUND;
    const MemoryUse use = machine.Memory(ref);
    memory->total = use.total;
    memory->reserved = use.reserved;
    memory->used = use.used;
    memory->free = use.total - use.reserved - use.used;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* count,
                                                     nvmlProcessInfo_t* infos) {
  return WithDevice(device, [&](Machine& machine, const DeviceRef& ref) -> nvmlReturn_t {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (const nvmlReturn_t denied = ParentAggregate(machine, ref); denied != NVML_SUCCESS) {
      return denied;
    }
    const std::vector<nvmlProcessInfo_t> processes = machine.Processes(ref);
    const auto needed = static_cast<unsigned int>(processes.size());
    if (*count < needed) {
      *count = needed;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    if (needed > 0 && infos == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    std::copy(processes.begin(), processes.end(), infos);
    *count = needed;
    return NVML_SUCCESS;
  });
}

}  // extern "C"
