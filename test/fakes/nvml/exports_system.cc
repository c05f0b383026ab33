// Init, shutdown, error strings, system queries and device enumeration.

#include <type_traits>

#include "test/fakes/nvml/exports.h"

// The exports must keep the exact types the NVML backend resolves them as.
#define GPUOP_FAKE_NVML_CHECK_SIGNATURE(name, params)                      \
  static_assert(std::is_same_v<decltype(&::name), nvmlReturn_t(*) params>, \
                #name " does not match hw/nvml/nvml_functions.h");
GPUOP_NVML_REQUIRED_FUNCTIONS(GPUOP_FAKE_NVML_CHECK_SIGNATURE)
GPUOP_NVML_OPTIONAL_FUNCTIONS(GPUOP_FAKE_NVML_CHECK_SIGNATURE)
#undef GPUOP_FAKE_NVML_CHECK_SIGNATURE
static_assert(std::is_same_v<decltype(&::nvmlErrorString), nvmlErrorString_fn>,
              "nvmlErrorString does not match hw/nvml/nvml_functions.h");

using gpuop::fakenvml::CopyString;
using gpuop::fakenvml::Driver;
using gpuop::fakenvml::Machine;

namespace gpuop::fakenvml {
namespace {

// Return codes nvml_abi.h leaves out because gpuop never acts on them.
constexpr nvmlReturn_t kErrorVgpuEccNotSupported = 22;
constexpr nvmlReturn_t kErrorFreqNotSupported = 24;
constexpr nvmlReturn_t kErrorDeprecated = 26;
constexpr nvmlReturn_t kErrorResetTypeNotSupported = 30;

}  // namespace

nvmlReturn_t CopyString(const std::string& value, char* out, unsigned int length) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (value.size() >= length) return NVML_ERROR_INSUFFICIENT_SIZE;
  value.copy(out, value.size());
  out[value.size()] = '\0';
  return NVML_SUCCESS;
}

}  // namespace gpuop::fakenvml

extern "C" {

const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED:
      return "Already Initialized";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER:
      return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_IRQ_ISSUE:
      return "Interrupt request issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
      return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM:
      return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED:
      return "GPU requires restart";
    case NVML_ERROR_OPERATING_SYSTEM:
      return "The operating system has blocked the request.";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "RM has detected an NVML/RM version mismatch.";
    case NVML_ERROR_IN_USE:
      return "In use by another client";
    case NVML_ERROR_MEMORY:
      return "Insufficient Memory";
    case NVML_ERROR_NO_DATA:
      return "No data";
    case gpuop::fakenvml::kErrorVgpuEccNotSupported:
      return "The requested vgpu operation is not available on target device, because ECC is "
             "enabled";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return "Insufficient resources for request";
    case gpuop::fakenvml::kErrorFreqNotSupported:
      return "Frequency not supported";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "Argument version mismatch";
    case gpuop::fakenvml::kErrorDeprecated:
      return "Deprecated";
    case NVML_ERROR_NOT_READY:
      return "Not Ready";
    case NVML_ERROR_GPU_NOT_FOUND:
      return "GPU not found";
    case NVML_ERROR_INVALID_STATE:
      return "Invalid state";
    case gpuop::fakenvml::kErrorResetTypeNotSupported:
      return "Reset type not supported";
    default:
      return "Unknown Error";
  }
}

const char* gpuop_fake_nvml_simulated(void) {
  return "SIMULATED: gpuop's fake NVML (test/fakes/nvml), no GPUs behind it";
}

nvmlReturn_t nvmlInit_v2(void) { return Driver::Get().Init(); }

nvmlReturn_t nvmlInit(void) { return Driver::Get().Init(); }

nvmlReturn_t nvmlInitWithFlags(unsigned int /*flags*/) { return Driver::Get().Init(); }

nvmlReturn_t nvmlShutdown(void) { return Driver::Get().Shutdown(); }

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  return Driver::Get().Run([&](Machine& machine) {
    return CopyString(machine.scenario().driver_version, version, length);
  });
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  return Driver::Get().Run([&](Machine& machine) {
    return CopyString(machine.scenario().nvml_version, version, length);
  });
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* version) {
  return Driver::Get().Run([&](Machine& machine) -> nvmlReturn_t {
    if (version == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *version = machine.scenario().cuda_version;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
  return nvmlSystemGetCudaDriverVersion(version);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  return Driver::Get().Run([&](Machine& machine) -> nvmlReturn_t {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *count = machine.gpu_count();
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int* count) { return nvmlDeviceGetCount_v2(count); }

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  return Driver::Get().Run([&](Machine& machine) -> nvmlReturn_t {
    if (device == nullptr || index >= machine.gpu_count()) return NVML_ERROR_INVALID_ARGUMENT;
    if (machine.gpu(index).lost) return NVML_ERROR_GPU_IS_LOST;
    if (const nvmlReturn_t injected = gpuop::fakenvml::InjectedError(
            machine.gpu(index).call_errors, "nvmlDeviceGetHandleByIndex_v2");
        injected != NVML_SUCCESS) {
      return injected;
    }
    *device = &machine.gpu(index).handle;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  return Driver::Get().Run([&](Machine& machine) -> nvmlReturn_t {
    if (uuid == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const nvmlReturn_t found = machine.FindByUuid(uuid, device);
    if (found != NVML_SUCCESS) return found;
    return gpuop::fakenvml::InjectedError((*device)->gpu->call_errors, "nvmlDeviceGetHandleByUUID");
  });
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pci_bus_id, nvmlDevice_t* device) {
  return Driver::Get().Run([&](Machine& machine) -> nvmlReturn_t {
    if (pci_bus_id == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const nvmlReturn_t found = machine.FindByBusId(pci_bus_id, device);
    if (found != NVML_SUCCESS) return found;
    return gpuop::fakenvml::InjectedError((*device)->gpu->call_errors,
                                          "nvmlDeviceGetHandleByPciBusId_v2");
  });
}

}  // extern "C"
