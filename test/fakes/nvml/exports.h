#ifndef GPUOP_TEST_FAKES_NVML_EXPORTS_H_
#define GPUOP_TEST_FAKES_NVML_EXPORTS_H_

// The C entry points of the fake libnvidia-ml.so.1, declared from the same X-macros the NVML
// backend resolves with dlsym (hw/nvml/nvml_functions.h), so a definition whose signature drifts
// from the project's declaration does not compile. Only these symbols are exported (the library
// is built with -fvisibility=hidden and a version script). Also the helpers the export files
// share.

#include <source_location>
#include <string>
#include <utility>

#include "hw/nvml/nvml_abi.h"
#include "hw/nvml/nvml_functions.h"
#include "test/fakes/nvml/call_errors.h"
#include "test/fakes/nvml/driver.h"
#include "test/fakes/nvml/machine.h"

#define GPUOP_FAKE_NVML_EXPORT __attribute__((visibility("default")))

extern "C" {
#define GPUOP_FAKE_NVML_DECLARE(name, params) GPUOP_FAKE_NVML_EXPORT nvmlReturn_t name params;
GPUOP_NVML_REQUIRED_FUNCTIONS(GPUOP_FAKE_NVML_DECLARE)
GPUOP_NVML_OPTIONAL_FUNCTIONS(GPUOP_FAKE_NVML_DECLARE)
#undef GPUOP_FAKE_NVML_DECLARE

GPUOP_FAKE_NVML_EXPORT const char* nvmlErrorString(nvmlReturn_t result);

// Entry points a real library also exports that gpuop does not resolve: the unversioned names
// older consumers bind to, and a few that other NVIDIA tools use.
GPUOP_FAKE_NVML_EXPORT nvmlReturn_t nvmlInit(void);
GPUOP_FAKE_NVML_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags);
GPUOP_FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int* count);
GPUOP_FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index,
                                                               nvmlDevice_t* device);
GPUOP_FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pci_bus_id,
                                                                     nvmlDevice_t* device);
GPUOP_FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version);
GPUOP_FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device,
                                                                nvmlGpuFabricInfoV_t* info);

// Not NVML: marks the library as this fake ("SIMULATED ..."), so the fake libcuda can tell it
// from a real NVML it might find on a machine with GPUs.
GPUOP_FAKE_NVML_EXPORT const char* gpuop_fake_nvml_simulated(void);

// Not NVML: a SIMULATED GPU reset, what `nvidia-smi -r` asks the driver for (the simulated
// nvidia-smi in ../driver calls it). For a whole-GPU handle, lost or not; INVALID_ARGUMENT for a
// MIG device's. IN_USE while another client uses the GPU (Machine::InUse); otherwise
// Machine::ResetGpu, written to the node's MIG state. UNINITIALIZED before nvmlInit_v2.
GPUOP_FAKE_NVML_EXPORT nvmlReturn_t gpuop_fake_nvml_reset_gpu(nvmlDevice_t device);
}  // extern "C"

namespace gpuop::fakenvml {

// Copies `value` and its terminating NUL; INVALID_ARGUMENT for a null buffer, INSUFFICIENT_SIZE
// when `length` cannot hold it.
nvmlReturn_t CopyString(const std::string& value, char* out, unsigned int length);

// Runs fn(Machine&, const DeviceRef&) for a valid handle of a GPU that is not lost, unless the GPU
// answers the calling entry point (`where`, the export's own location) with an injected error
// (call_errors.h); a MIG device answers its parent GPU's.
template <typename Fn>
nvmlReturn_t OnDevice(Machine& machine, nvmlDevice_t device, Fn&& fn, std::source_location where) {
  DeviceRef ref;
  if (const nvmlReturn_t result = machine.Resolve(device, &ref); result != NVML_SUCCESS) {
    return result;
  }
  if (const nvmlReturn_t injected =
          InjectedError(ref.gpu->call_errors, CallName(where.function_name()));
      injected != NVML_SUCCESS) {
    return injected;
  }
  return fn(machine, ref);
}

template <typename Fn>
nvmlReturn_t WithDevice(nvmlDevice_t device, Fn&& fn,
                        std::source_location where = std::source_location::current()) {
  return Driver::Get().Run(
      [&](Machine& machine) { return OnDevice(machine, device, std::forward<Fn>(fn), where); });
}

// As WithDevice, for queries a MIG device does not answer (NOT_SUPPORTED): fn(Machine&, GpuState&).
template <typename Fn>
nvmlReturn_t WithGpu(nvmlDevice_t device, Fn&& fn,
                     std::source_location where = std::source_location::current()) {
  return WithDevice(
      device,
      [&](Machine& machine, const DeviceRef& ref) -> nvmlReturn_t {
        if (ref.is_mig()) return NVML_ERROR_NOT_SUPPORTED;
        return fn(machine, *ref.gpu);
      },
      where);
}

}  // namespace gpuop::fakenvml

#endif  // GPUOP_TEST_FAKES_NVML_EXPORTS_H_
