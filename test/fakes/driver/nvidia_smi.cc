// nvidia-smi: SIMULATED, a tiny stand-in for NVIDIA's nvidia-smi that reports what the NVML
// library it loads (dlopen("libnvidia-ml.so.1"), as the real one does) shows this process. It
// makes the driver container's startup probe (`nvidia-smi && touch .../.driver-ctr-ready`) mean
// something: it fails until the simulated driver is up and its device nodes can be opened.
//
//   nvidia-smi        a SIMULATED header line, then the GPU list
//   nvidia-smi -L     the GPU list, as the real one prints it:
//                       GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)
//                         MIG 1g.10gb     Device  0: (UUID: MIG-...)
//   nvidia-smi -r [-i <id>[,<id>...]]   (also --gpu-reset, --id=<ids>)
//                     resets the GPUs (every GPU without -i), each named by its index, PCI bus id
//                     (0000:18:00.0 or 00000000:18:00.0, any case) or UUID, through the simulated
//                     NVML's gpuop_fake_nvml_reset_gpu; prints, as the real one does,
//                       GPU 00000000:18:00.0 was successfully reset.
//                       All done.
//
// Exit codes and messages are the real nvidia-smi's: 0 success; 2 a bad argument; 3 not
// available (a reset with an NVML that is not the simulated one, or of a MIG device); 4 no
// permission; 6 no GPU, or no GPU matches -i ("No devices were found"); 9 the driver is not loaded
// ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. ..."); 12 no
// NVML library; 15 the GPU is lost; 255 anything else, a GPU another process uses among them.

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <dlfcn.h>

#include "hw/nvml/nvml_abi.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitBadArgument = 2;
constexpr int kExitNotAvailable = 3;
constexpr int kExitNoPermission = 4;
constexpr int kExitNoDevices = 6;
constexpr int kExitDriverNotLoaded = 9;
constexpr int kExitNoLibrary = 12;
constexpr int kExitGpuLost = 15;
constexpr int kExitOther = 255;

constexpr const char* kUsage =
    "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n"
    "(SIMULATED nvidia-smi: only no arguments, -L, and -r [-i <ids>] are supported)\n";

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
  nvmlReturn_t (*by_uuid)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*by_pci)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*pci_info)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  // Not NVML: the simulated library's GPU reset (test/fakes/nvml/exports.h).
  nvmlReturn_t (*reset_gpu)(nvmlDevice_t) = nullptr;
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

std::vector<std::string> SplitIds(const std::string& text) {
  std::vector<std::string> ids;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t comma = std::min(text.find(',', begin), text.size());
    if (comma > begin) ids.push_back(text.substr(begin, comma - begin));
    begin = comma + 1;
  }
  return ids;
}

bool AllDigits(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(),
                                      [](unsigned char c) { return std::isdigit(c) != 0; });
}

// The handle of the GPU `id` names, as the real nvidia-smi's -i reads it: an index, a PCI bus id
// or a UUID.
nvmlReturn_t Lookup(const Nvml& nvml, const std::string& id, nvmlDevice_t* device) {
  if (AllDigits(id)) {
    if (id.size() > 9) return NVML_ERROR_NOT_FOUND;
    return nvml.handle(static_cast<unsigned int>(std::stoul(id)), device);
  }
  if (id.rfind("GPU-", 0) == 0 || id.rfind("MIG-", 0) == 0) {
    return nvml.by_uuid != nullptr ? nvml.by_uuid(id.c_str(), device) : NVML_ERROR_NOT_FOUND;
  }
  if (id.find(':') != std::string::npos) {
    return nvml.by_pci != nullptr ? nvml.by_pci(id.c_str(), device) : NVML_ERROR_NOT_FOUND;
  }
  return NVML_ERROR_NOT_FOUND;
}

// nvidia-smi -r: every GPU in `ids` (every GPU when empty) is found first, then each is reset.
int ResetGpus(const Nvml& nvml, const std::vector<std::string>& ids) {
  struct Target {
    std::string id;
    nvmlDevice_t device = nullptr;
  };
  std::vector<Target> targets;
  std::vector<std::string> wanted = ids;
  if (wanted.empty()) {
    unsigned int count = 0;
    if (const nvmlReturn_t counted = nvml.count(&count); counted != NVML_SUCCESS) {
      std::printf("Unable to determine the number of GPUs: %s\n", ErrorString(nvml, counted));
      return kExitOther;
    }
    if (count == 0) {
      std::printf("No devices were found\n");
      return kExitNoDevices;
    }
    for (unsigned int i = 0; i < count; ++i) wanted.push_back(std::to_string(i));
  }
  for (const std::string& id : wanted) {
    Target target{id};
    const nvmlReturn_t found = Lookup(nvml, id, &target.device);
    if (found == NVML_ERROR_NOT_FOUND || found == NVML_ERROR_INVALID_ARGUMENT) {
      std::printf("No devices were found: no GPU has the index, PCI bus id or UUID \"%s\"\n",
                  id.c_str());
      return kExitNoDevices;
    }
    if (found != NVML_SUCCESS) {
      std::printf("Unable to determine the device handle for GPU %s: %s\n", id.c_str(),
                  ErrorString(nvml, found));
      return found == NVML_ERROR_GPU_IS_LOST     ? kExitGpuLost
             : found == NVML_ERROR_NO_PERMISSION ? kExitNoPermission
                                                 : kExitOther;
    }
    targets.push_back(target);
  }
  int exit_code = kExitOk;
  for (const Target& target : targets) {
    nvmlPciInfo_t pci{};
    std::string bus_id = target.id;
    if (nvml.pci_info != nullptr && nvml.pci_info(target.device, &pci) == NVML_SUCCESS) {
      bus_id = pci.busId;
    }
    const nvmlReturn_t reset = nvml.reset_gpu(target.device);
    int failed = kExitOk;
    switch (reset) {
      case NVML_SUCCESS:
        std::printf("GPU %s was successfully reset.\n", bus_id.c_str());
        break;
      case NVML_ERROR_IN_USE:
        std::printf(
            "GPU %s was not reset: another process is using it. Stop every process that uses "
            "the GPU (CUDA applications, device plugins, monitoring agents, another nvidia-smi) "
            "and try again.\n",
            bus_id.c_str());
        failed = kExitOther;
        break;
      case NVML_ERROR_INVALID_ARGUMENT:
        std::printf("GPU %s was not reset: %s is a MIG device; reset the whole GPU instead.\n",
                    bus_id.c_str(), target.id.c_str());
        failed = kExitNotAvailable;
        break;
      case NVML_ERROR_NO_PERMISSION:
        std::printf("GPU %s was not reset: Insufficient Permissions\n", bus_id.c_str());
        failed = kExitNoPermission;
        break;
      default:
        std::printf("GPU %s was not reset: %s\n", bus_id.c_str(), ErrorString(nvml, reset));
        failed = kExitOther;
        break;
    }
    if (exit_code == kExitOk) exit_code = failed;
  }
  if (exit_code == kExitOk) std::printf("All done.\n");
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  bool list_only = false;
  bool reset = false;
  bool ids_given = false;
  std::vector<std::string> ids;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-L" || arg == "--list-gpus") {
      list_only = true;
    } else if (arg == "-r" || arg == "--gpu-reset") {
      reset = true;
    } else if ((arg == "-i" || arg == "--id") && i + 1 < argc) {
      ids_given = true;
      for (std::string& id : SplitIds(argv[++i])) ids.push_back(std::move(id));
    } else if (arg.rfind("--id=", 0) == 0) {
      ids_given = true;
      for (std::string& id : SplitIds(arg.substr(5))) ids.push_back(std::move(id));
    } else {
      std::fprintf(stderr, "%s", kUsage);
      return kExitBadArgument;
    }
  }
  if ((reset && list_only) || (ids_given && !reset) || (ids_given && ids.empty())) {
    std::fprintf(stderr, "%s", kUsage);
    return kExitBadArgument;
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
  Resolve(library, "nvmlDeviceGetHandleByUUID", nvml.by_uuid);
  Resolve(library, "nvmlDeviceGetHandleByPciBusId_v2", nvml.by_pci);
  Resolve(library, "nvmlDeviceGetPciInfo_v3", nvml.pci_info);
  Resolve(library, "gpuop_fake_nvml_reset_gpu", nvml.reset_gpu);
  if (nvml.init == nullptr || nvml.shutdown == nullptr || nvml.count == nullptr ||
      nvml.handle == nullptr || nvml.name == nullptr || nvml.uuid == nullptr) {
    std::printf("Failed to initialize NVML: Function Not Found\n");
    return kExitOther;
  }
  if (reset && nvml.reset_gpu == nullptr) {
    std::printf(
        "GPU reset is not available: the libnvidia-ml.so.1 loaded is not gpuop's SIMULATED NVML, "
        "and only that one can reset a simulated GPU (this nvidia-smi is SIMULATED too).\n");
    return kExitNotAvailable;
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
  if (reset) {
    const int code = ResetGpus(nvml, ids);
    nvml.shutdown();
    return code;
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
