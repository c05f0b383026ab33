// Event sets: create, register devices, wait, free.

#include "test/fakes/nvml/exports.h"

using gpuop::fakenvml::Driver;
using gpuop::fakenvml::EventHub;
using gpuop::fakenvml::GpuState;
using gpuop::fakenvml::Machine;
using gpuop::fakenvml::WithGpu;

extern "C" {

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  return Driver::Get().Run([&](Machine& machine) -> nvmlReturn_t {
    if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *set = machine.events().Create();
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long* types) {
  return WithGpu(device, [&](Machine&, GpuState& gpu) -> nvmlReturn_t {
    if (types == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *types = EventHub::Supported(gpu);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long types,
                                      nvmlEventSet_t set) {
  return WithGpu(device, [&](Machine& machine, GpuState& gpu) -> nvmlReturn_t {
    nvmlEventSet_st* live = machine.events().Find(set);
    if (live == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    return machine.events().Register(gpu, types, *live);
  });
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                 unsigned int timeout_ms) {
  return Driver::Get().WaitEvent(set, data, timeout_ms);
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  return Driver::Get().Run([&](Machine& machine) -> nvmlReturn_t {
    return machine.events().Free(set) ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
  });
}

}  // extern "C"
