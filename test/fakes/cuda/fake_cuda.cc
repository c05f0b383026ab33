// A fake libcuda.so.1 for tests of code that runs CUDA work through the driver API.
//
// SIMULATED: there is no GPU. "Device memory" is host memory; cuModuleLoadData accepts PTX that
// defines the entry `vector_add` (the only kernel gpuop runs) and cuLaunchKernel performs that
// vector add on the host, honouring the grid and block sizes. Faults for tests come from the
// environment variable GPUOP_FAKE_CUDA_FAULT:
//   no-device       cuInit fails with CUDA_ERROR_NO_DEVICE (100)
//   bad-ptx         cuModuleLoadData fails with CUDA_ERROR_INVALID_PTX (218)
//   wrong-result    the kernel gets one element wrong
//   not-ready       cuCtxCreate_v2 fails with CUDA_ERROR_SYSTEM_NOT_READY (802)
// The devices, enumerated at every cuInit:
//   - GPUOP_FAKE_CUDA_DEVICES set: the PCI bus ids it lists (comma-separated, in ordinal order);
//   - else, when dlopen("libnvidia-ml.so.1") finds the fake NVML (test/fakes/nvml, recognised by
//     its gpuop_fake_nvml_simulated marker): the GPUs it shows this process, in NVML index order
//     (so device visibility applies: a container given /dev/nvidia3 has one CUDA device, GPU 3),
//     with CUDA's MIG rules (NVIDIA's MIG user guide, "CUDA device enumeration"): a MIG-enabled
//     GPU is no CUDA device itself, its MIG devices are, and a process enumerates at most one
//     MIG device; CUDA_VISIBLE_DEVICES (indexes, GPU-<uuid>, MIG-<uuid>, comma-separated) picks
//     and orders them, and an entry that names no device ends the list, as CUDA reads it;
//     if that NVML fails to initialise, or shows no device, cuInit returns CUDA_ERROR_NO_DEVICE;
//   - else (no fake NVML to be found): the one device 0000:17:00.0.
// The number of live allocations, modules and contexts is exported (gpuop_fake_cuda_live) so
// tests can check that everything was released. Only cu* and gpuop_fake_cuda_* are exported
// (cuda/exports.map); the library needs nothing but glibc.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <dlfcn.h>
#include <strings.h>

#include "hw/nvml/nvml_abi.h"

namespace {

using CUresult = int;
constexpr CUresult kSuccess = 0;
constexpr CUresult kInvalidValue = 1;
constexpr CUresult kNotInitialized = 3;
constexpr CUresult kNoDevice = 100;
constexpr CUresult kInvalidDevice = 101;
constexpr CUresult kInvalidContext = 201;
constexpr CUresult kInvalidPtx = 218;
constexpr CUresult kNotFound = 500;
constexpr CUresult kSystemNotReady = 802;

struct Module {};
struct Function {};
Function vector_add_function;

struct Device {
  std::string bus_id;  // "0000:17:00.0"; a MIG device's is its GPU's
  std::string name;
};

// A GPU as the fake NVML shows it: itself, or (MIG enabled) its MIG devices.
struct NvmlGpu {
  Device whole;
  std::string uuid;
  bool mig_enabled = false;
  std::vector<std::pair<std::string, Device>> mig_devices;  // uuid, device
};

std::mutex mu;
bool initialized = false;
std::vector<Device> devices;  // guarded by mu; set by cuInit
std::set<void*> allocations;
std::set<void*> modules;
std::set<void*> contexts;

constexpr const char* kDefaultName = "Fake CUDA Device";

// The comma-separated entries of `list`, empty ones left out.
std::vector<std::string> SplitList(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    if (comma > start) out.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

std::vector<Device> ParseDeviceList(const std::string& list) {
  std::vector<Device> out;
  for (std::string& bus_id : SplitList(list)) out.push_back({std::move(bus_id), kDefaultName});
  return out;
}

// The GPUs the fake NVML shows this process; `found` false when no fake NVML can be loaded.
std::vector<NvmlGpu> NvmlGpus(bool* found) {
  *found = false;
  std::vector<NvmlGpu> out;
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (nvml == nullptr) return out;
  if (dlsym(nvml, "gpuop_fake_nvml_simulated") == nullptr) {  // a real NVML: not ours to play
    dlclose(nvml);
    return out;
  }
  *found = true;
  using InitFn = nvmlReturn_t (*)();
  using CountFn = nvmlReturn_t (*)(unsigned int*);
  using HandleFn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
  using PciFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t*);
  using NameFn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int);
  using ModeFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, unsigned int*);
  using MaxFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
  using MigFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, nvmlDevice_t*);
  const auto init = reinterpret_cast<InitFn>(dlsym(nvml, "nvmlInit_v2"));
  const auto shutdown = reinterpret_cast<InitFn>(dlsym(nvml, "nvmlShutdown"));
  const auto count = reinterpret_cast<CountFn>(dlsym(nvml, "nvmlDeviceGetCount_v2"));
  const auto handle = reinterpret_cast<HandleFn>(dlsym(nvml, "nvmlDeviceGetHandleByIndex_v2"));
  const auto pci = reinterpret_cast<PciFn>(dlsym(nvml, "nvmlDeviceGetPciInfo_v3"));
  const auto name = reinterpret_cast<NameFn>(dlsym(nvml, "nvmlDeviceGetName"));
  const auto uuid = reinterpret_cast<NameFn>(dlsym(nvml, "nvmlDeviceGetUUID"));
  const auto mode = reinterpret_cast<ModeFn>(dlsym(nvml, "nvmlDeviceGetMigMode"));
  const auto max_mig = reinterpret_cast<MaxFn>(dlsym(nvml, "nvmlDeviceGetMaxMigDeviceCount"));
  const auto mig = reinterpret_cast<MigFn>(dlsym(nvml, "nvmlDeviceGetMigDeviceHandleByIndex"));
  auto text = [](NameFn fn, nvmlDevice_t device, const char* fallback) {
    char buffer[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    if (fn == nullptr || fn(device, buffer, sizeof(buffer)) != NVML_SUCCESS)
      return std::string(fallback);
    return std::string(buffer);
  };
  if (init != nullptr && shutdown != nullptr && count != nullptr && handle != nullptr &&
      pci != nullptr && name != nullptr && init() == NVML_SUCCESS) {
    unsigned int n = 0;
    if (count(&n) != NVML_SUCCESS) n = 0;
    for (unsigned int i = 0; i < n; ++i) {
      nvmlDevice_t device = nullptr;
      nvmlPciInfo_t info{};
      if (handle(i, &device) != NVML_SUCCESS || pci(device, &info) != NVML_SUCCESS) continue;
      char bus_id[32];
      std::snprintf(bus_id, sizeof(bus_id), "%04x:%02x:%02x.0", info.domain, info.bus, info.device);
      NvmlGpu gpu;
      gpu.whole = {bus_id, text(name, device, kDefaultName)};
      gpu.uuid = text(uuid, device, "");
      unsigned int current = 0;
      unsigned int pending = 0;
      gpu.mig_enabled = mode != nullptr && mode(device, &current, &pending) == NVML_SUCCESS &&
                        current == static_cast<unsigned int>(NVML_DEVICE_MIG_ENABLE);
      unsigned int slots = 0;
      if (gpu.mig_enabled && max_mig != nullptr && mig != nullptr &&
          max_mig(device, &slots) == NVML_SUCCESS) {
        for (unsigned int m = 0; m < slots; ++m) {
          nvmlDevice_t instance = nullptr;
          if (mig(device, m, &instance) != NVML_SUCCESS) break;
          gpu.mig_devices.push_back(
              {text(uuid, instance, ""), Device{bus_id, text(name, instance, kDefaultName)}});
        }
      }
      out.push_back(std::move(gpu));
    }
    shutdown();
  }
  dlclose(nvml);
  return out;
}

// CUDA's view of `gpus` (see the top of the file): CUDA_VISIBLE_DEVICES, whole GPUs, and one MIG
// device per process.
std::vector<Device> CudaDevices(const std::vector<NvmlGpu>& gpus) {
  std::vector<Device> out;
  bool took_mig = false;
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (visible == nullptr) {
    for (const NvmlGpu& gpu : gpus) {
      if (!gpu.mig_enabled) {
        out.push_back(gpu.whole);
      } else if (!took_mig && !gpu.mig_devices.empty()) {
        out.push_back(gpu.mig_devices.front().second);
        took_mig = true;
      }
    }
    return out;
  }
  for (const std::string& token : SplitList(visible)) {
    const NvmlGpu* whole = nullptr;
    const Device* mig = nullptr;
    if (!token.empty() && std::all_of(token.begin(), token.end(), ::isdigit)) {
      const size_t index = std::strtoul(token.c_str(), nullptr, 10);
      if (index < gpus.size()) whole = &gpus[index];
    } else {
      for (const NvmlGpu& gpu : gpus) {
        if (gpu.uuid == token) whole = &gpu;
        for (const auto& [id, device] : gpu.mig_devices) {
          if (id == token) mig = &device;
        }
      }
    }
    if (whole != nullptr && !whole->mig_enabled) {
      out.push_back(whole->whole);
    } else if (mig != nullptr) {
      if (!took_mig) out.push_back(*mig);
      took_mig = true;
    } else {
      break;  // names no CUDA device: CUDA ignores the rest of the list
    }
  }
  return out;
}

std::vector<Device> EnumerateDevices() {
  if (const char* env = std::getenv("GPUOP_FAKE_CUDA_DEVICES"); env != nullptr) {
    return ParseDeviceList(env);
  }
  bool found = false;
  const std::vector<NvmlGpu> gpus = NvmlGpus(&found);
  if (!found) return ParseDeviceList("0000:17:00.0");
  return CudaDevices(gpus);
}

// Callers hold mu.
bool ValidDevice(int device) { return device >= 0 && static_cast<size_t>(device) < devices.size(); }

// CUDA accepts a 4- or 8-digit PCI domain ("0000:17:00.0", "00000000:17:00.0").
bool SameBusId(const std::string& device, const char* asked) {
  std::string a = asked;
  if (a.size() == device.size() + 4 && a.compare(0, 4, "0000") == 0) a = a.substr(4);
  return strcasecmp(a.c_str(), device.c_str()) == 0;
}

bool Fault(const char* name) {
  const char* fault = std::getenv("GPUOP_FAKE_CUDA_FAULT");
  return fault != nullptr && std::strcmp(fault, name) == 0;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int gpuop_fake_cuda_live() {
  std::lock_guard lock(mu);
  return static_cast<int>(allocations.size() + modules.size() + contexts.size());
}

__attribute__((visibility("default"))) CUresult cuInit(unsigned int flags) {
  if (flags != 0) return kInvalidValue;
  if (Fault("no-device")) return kNoDevice;
  std::vector<Device> found = EnumerateDevices();  // outside the lock: it loads NVML
  std::lock_guard lock(mu);
  devices = std::move(found);
  initialized = !devices.empty();
  return initialized ? kSuccess : kNoDevice;
}

__attribute__((visibility("default"))) CUresult cuDriverGetVersion(int* version) {
  if (version == nullptr) return kInvalidValue;
  *version = 12080;
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult cuDeviceGetCount(int* count) {
  std::lock_guard lock(mu);
  if (!initialized) return kNotInitialized;
  if (count == nullptr) return kInvalidValue;
  *count = static_cast<int>(devices.size());
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult cuDeviceGet(int* device, int ordinal) {
  std::lock_guard lock(mu);
  if (!initialized) return kNotInitialized;
  if (device == nullptr) return kInvalidValue;
  if (!ValidDevice(ordinal)) return kInvalidDevice;
  *device = ordinal;
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult cuDeviceGetByPCIBusId(int* device,
                                                                      const char* bus_id) {
  std::lock_guard lock(mu);
  if (!initialized) return kNotInitialized;
  if (device == nullptr || bus_id == nullptr) return kInvalidValue;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (SameBusId(devices[i].bus_id, bus_id)) {
      *device = static_cast<int>(i);
      return kSuccess;
    }
  }
  return kInvalidDevice;
}

__attribute__((visibility("default"))) CUresult cuDeviceGetPCIBusId(char* bus_id, int len,
                                                                    int device) {
  std::lock_guard lock(mu);
  if (!initialized) return kNotInitialized;
  if (bus_id == nullptr || len <= 0) return kInvalidValue;
  if (!ValidDevice(device)) return kInvalidDevice;
  std::strncpy(bus_id, devices[device].bus_id.c_str(), static_cast<size_t>(len) - 1);
  bus_id[len - 1] = '\0';
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult cuDeviceGetName(char* name, int len, int device) {
  std::lock_guard lock(mu);
  if (name == nullptr || len <= 0) return kInvalidValue;
  if (!ValidDevice(device)) return kInvalidDevice;
  std::strncpy(name, devices[device].name.c_str(), static_cast<size_t>(len) - 1);
  name[len - 1] = '\0';
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult cuCtxCreate_v2(void** ctx, unsigned int,
                                                               int device) {
  std::lock_guard lock(mu);
  if (!initialized) return kNotInitialized;
  if (ctx == nullptr) return kInvalidValue;
  if (!ValidDevice(device)) return kInvalidDevice;
  if (Fault("not-ready")) return kSystemNotReady;
  *ctx = std::malloc(1);
  contexts.insert(*ctx);
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult cuCtxDestroy_v2(void* ctx) {
  std::lock_guard lock(mu);
  if (contexts.erase(ctx) == 0) return kInvalidContext;
  std::free(ctx);
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult cuModuleLoadData(void** module, const void* image) {
  if (module == nullptr || image == nullptr) return kInvalidValue;
  const std::string ptx(static_cast<const char*>(image));
  if (Fault("bad-ptx") || ptx.find(".entry vector_add") == std::string::npos ||
      ptx.find(".version") == std::string::npos) {
    return kInvalidPtx;
  }
  std::lock_guard lock(mu);
  *module = new Module();
  modules.insert(*module);
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult cuModuleUnload(void* module) {
  std::lock_guard lock(mu);
  if (modules.erase(module) == 0) return kInvalidValue;
  delete static_cast<Module*>(module);
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult cuModuleGetFunction(void** function, void* module,
                                                                    const char* name) {
  if (function == nullptr || name == nullptr) return kInvalidValue;
  std::lock_guard lock(mu);
  if (!modules.contains(module)) return kInvalidValue;
  if (std::strcmp(name, "vector_add") != 0) return kNotFound;
  *function = &vector_add_function;
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult cuMemAlloc_v2(unsigned long long* ptr,
                                                              size_t bytes) {
  if (ptr == nullptr || bytes == 0) return kInvalidValue;
  std::lock_guard lock(mu);
  void* memory = std::malloc(bytes);
  allocations.insert(memory);
  *ptr = reinterpret_cast<unsigned long long>(memory);
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult cuMemFree_v2(unsigned long long ptr) {
  std::lock_guard lock(mu);
  void* memory = reinterpret_cast<void*>(ptr);
  if (allocations.erase(memory) == 0) return kInvalidValue;
  std::free(memory);
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult cuMemcpyHtoD_v2(unsigned long long dst,
                                                                const void* src, size_t bytes) {
  std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult cuMemcpyDtoH_v2(void* dst, unsigned long long src,
                                                                size_t bytes) {
  std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult cuLaunchKernel(
    void* function, unsigned int grid_x, unsigned int grid_y, unsigned int grid_z,
    unsigned int block_x, unsigned int block_y, unsigned int block_z, unsigned int, void*,
    void** params, void**) {
  if (function != &vector_add_function || params == nullptr) return kInvalidValue;
  if (grid_y != 1 || grid_z != 1 || block_y != 1 || block_z != 1) return kInvalidValue;
  const auto* a = reinterpret_cast<const float*>(*static_cast<unsigned long long*>(params[0]));
  const auto* b = reinterpret_cast<const float*>(*static_cast<unsigned long long*>(params[1]));
  auto* c = reinterpret_cast<float*>(*static_cast<unsigned long long*>(params[2]));
  const unsigned int n = *static_cast<unsigned int*>(params[3]);
  // Only the threads the launch covers run, as on a GPU.
  const unsigned long long threads = static_cast<unsigned long long>(grid_x) * block_x;
  for (unsigned long long i = 0; i < threads && i < n; ++i) c[i] = a[i] + b[i];
  if (Fault("wrong-result") && n > 7) c[7] += 1.0f;
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult cuCtxSynchronize() { return kSuccess; }

__attribute__((visibility("default"))) CUresult cuGetErrorName(CUresult error, const char** name) {
  if (name == nullptr) return kInvalidValue;
  switch (error) {
    case kSuccess:
      *name = "CUDA_SUCCESS";
      break;
    case kInvalidValue:
      *name = "CUDA_ERROR_INVALID_VALUE";
      break;
    case kNotInitialized:
      *name = "CUDA_ERROR_NOT_INITIALIZED";
      break;
    case kNoDevice:
      *name = "CUDA_ERROR_NO_DEVICE";
      break;
    case kInvalidDevice:
      *name = "CUDA_ERROR_INVALID_DEVICE";
      break;
    case kInvalidContext:
      *name = "CUDA_ERROR_INVALID_CONTEXT";
      break;
    case kInvalidPtx:
      *name = "CUDA_ERROR_INVALID_PTX";
      break;
    case kNotFound:
      *name = "CUDA_ERROR_NOT_FOUND";
      break;
    case kSystemNotReady:
      *name = "CUDA_ERROR_SYSTEM_NOT_READY";
      break;
    default:
      return kInvalidValue;
  }
  return kSuccess;
}

}  // extern "C"
