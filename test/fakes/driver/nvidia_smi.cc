// nvidia-smi: SIMULATED, a tiny stand-in for NVIDIA's nvidia-smi that reports what the NVML
// library it loads (dlopen("libnvidia-ml.so.1"), as the real one does) shows this process. It
// makes the driver container's startup probe (`nvidia-smi && touch .../.driver-ctr-ready`) mean
// something: it fails until the simulated driver is up and its device nodes can be opened.
//
//   nvidia-smi        a SIMULATED header line, then the GPU list
//   nvidia-smi -L     the GPU list, as the real one prints it:
//                       GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)
//                         MIG 1g.10gb     Device  0: (UUID: MIG-...)
//
// Exit codes and messages are the real nvidia-smi's: 0 success; 2 a bad argument; 4 no
// permission; 6 no GPU ("No devices were found"); 9 the driver is not loaded ("NVIDIA-SMI has
// failed because it couldn't communicate with the NVIDIA driver. ..."); 12 no NVML library;
// 255 anything else.

#include <cstdio>
#include <cstring>
#include <string>

#include <dlfcn.h>

#include "hw/nvml/nvml_abi.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitBadArgument = 2;
constexpr int kExitNoPermission = 4;
constexpr int kExitNoDevices = 6;
constexpr int kExitDriverNotLoaded = 9;
constexpr int kExitNoLibrary = 12;
constexpr int kExitOther = 255;

struct Nvml {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*driver_version)(char*, unsigned int) = nullptr;
  nvmlReturn_t (*cuda_version)(int*) = nullptr;
  nvmlReturn_t (*count)(unsigned int*) = nullptr;
  nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*mig_mode)(nvmlDevice_t, unsigned int*, unsigned int*) = nullptr;
  nvmlReturn_t (*max_mig)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*mig_handle)(nvmlDevice_t, unsigned int, nvmlDevice_t*) = nullptr;
};

template <typename Fn>
void Resolve(void* library, const char* symbol, Fn& out) {
  out = reinterpret_cast<Fn>(dlsym(library, symbol));
}

const char* ErrorString(const Nvml& nvml, nvmlReturn_t result) {
  return nvml.error_string != nullptr ? nvml.error_string(result) : "Unknown Error";
}

void PrintGpus(const Nvml& nvml, unsigned int count) {
  for (unsigned int i = 0; i < count; ++i) {
    nvmlDevice_t device = nullptr;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = "Unknown";
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "Unknown";
    const nvmlReturn_t result = nvml.handle(i, &device);
    if (result != NVML_SUCCESS) {
      std::printf("GPU %u: Unable to determine the device handle for GPU%u: %s\n", i, i,
                  ErrorString(nvml, result));
      continue;
    }
    nvml.name(device, name, sizeof(name));
    nvml.uuid(device, uuid, sizeof(uuid));
    std::printf("GPU %u: %s (UUID: %s)\n", i, name, uuid);
    unsigned int current = 0;
    unsigned int pending = 0;
    unsigned int max = 0;
    if (nvml.mig_mode == nullptr || nvml.max_mig == nullptr || nvml.mig_handle == nullptr ||
        nvml.mig_mode(device, &current, &pending) != NVML_SUCCESS || current != 1 ||
        nvml.max_mig(device, &max) != NVML_SUCCESS) {
      continue;
    }
    for (unsigned int m = 0, shown = 0; m < max; ++m) {
      nvmlDevice_t mig = nullptr;
      if (nvml.mig_handle(device, m, &mig) != NVML_SUCCESS) continue;
      char mig_name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = "";
      char mig_uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "Unknown";
      nvml.name(mig, mig_name, sizeof(mig_name));
      nvml.uuid(mig, mig_uuid, sizeof(mig_uuid));
      const char* profile = std::strstr(mig_name, "MIG ");
      std::printf("  %-15s Device %2u: (UUID: %s)\n", profile != nullptr ? profile : "MIG", shown++,
                  mig_uuid);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool list_only = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-L") == 0 || std::strcmp(argv[i], "--list-gpus") == 0) {
      list_only = true;
    } else {
      std::fprintf(stderr,
                   "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n"
                   "(SIMULATED nvidia-smi: only no arguments and -L are supported)\n");
      return kExitBadArgument;
    }
  }
  void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    std::printf(
        "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure that "
        "the NVIDIA Display Driver is properly installed and present in your system.\n"
        "Please also try adding directory that contains libnvidia-ml.so to your system PATH.\n");
    return kExitNoLibrary;
  }
  Nvml nvml;
  Resolve(library, "nvmlInit_v2", nvml.init);
  Resolve(library, "nvmlShutdown", nvml.shutdown);
  Resolve(library, "nvmlErrorString", nvml.error_string);
  Resolve(library, "nvmlSystemGetDriverVersion", nvml.driver_version);
  Resolve(library, "nvmlSystemGetCudaDriverVersion", nvml.cuda_version);
  Resolve(library, "nvmlDeviceGetCount_v2", nvml.count);
  Resolve(library, "nvmlDeviceGetHandleByIndex_v2", nvml.handle);
  Resolve(library, "nvmlDeviceGetName", nvml.name);
  Resolve(library, "nvmlDeviceGetUUID", nvml.uuid);
  Resolve(library, "nvmlDeviceGetMigMode", nvml.mig_mode);
  Resolve(library, "nvmlDeviceGetMaxMigDeviceCount", nvml.max_mig);
  Resolve(library, "nvmlDeviceGetMigDeviceHandleByIndex", nvml.mig_handle);
  if (nvml.init == nullptr || nvml.shutdown == nullptr || nvml.count == nullptr ||
      nvml.handle == nullptr || nvml.name == nullptr || nvml.uuid == nullptr) {
    std::printf("Failed to initialize NVML: Function Not Found\n");
    return kExitOther;
  }
  const nvmlReturn_t init = nvml.init();
  if (init == NVML_ERROR_DRIVER_NOT_LOADED) {
    std::printf(
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
        "that the latest NVIDIA driver is installed and running.\n\n");
    return kExitDriverNotLoaded;
  }
  if (init != NVML_SUCCESS) {
    std::printf("Failed to initialize NVML: %s\n", ErrorString(nvml, init));
    return init == NVML_ERROR_NO_PERMISSION ? kExitNoPermission : kExitOther;
  }
  unsigned int count = 0;
  const nvmlReturn_t counted = nvml.count(&count);
  int exit_code = kExitOk;
  if (counted != NVML_SUCCESS) {
    std::printf("Unable to determine the number of GPUs: %s\n", ErrorString(nvml, counted));
    exit_code = kExitOther;
  } else if (count == 0) {
    std::printf("No devices were found\n");
    exit_code = kExitNoDevices;
  } else {
    if (!list_only) {
      char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "N/A";
      int cuda = 0;
      if (nvml.driver_version != nullptr) nvml.driver_version(version, sizeof(version));
      if (nvml.cuda_version != nullptr) nvml.cuda_version(&cuda);
      std::printf("SIMULATED NVIDIA-SMI (gpuop)    Driver Version: %s    CUDA Version: %d.%d\n",
                  version, cuda / 1000, (cuda % 1000) / 10);
    }
    PrintGpus(nvml, count);
  }
  nvml.shutdown();
  return exit_code;
}
