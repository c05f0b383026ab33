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
// The devices are the PCI bus ids listed in GPUOP_FAKE_CUDA_DEVICES (comma-separated, in ordinal
// order), by default the one device 0000:17:00.0.
// The number of live allocations, modules and contexts is exported (gpuop_fake_cuda_live) so
// tests can check that everything was released.
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <strings.h>

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

std::mutex mu;
bool initialized = false;
std::set<void*> allocations;
std::set<void*> modules;
std::set<void*> contexts;

// The device list, read once.
const std::vector<std::string>& Devices() {
  static const std::vector<std::string> devices = [] {
    std::vector<std::string> out;
    const char* env = std::getenv("GPUOP_FAKE_CUDA_DEVICES");
    std::string list = env != nullptr ? env : "0000:17:00.0";
    size_t start = 0;
    while (start <= list.size()) {
      size_t comma = list.find(',', start);
      if (comma == std::string::npos) comma = list.size();
      if (comma > start) out.push_back(list.substr(start, comma - start));
      start = comma + 1;
    }
    return out;
  }();
  return devices;
}

bool ValidDevice(int device) {
  return device >= 0 && static_cast<size_t>(device) < Devices().size();
}

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
  std::lock_guard lock(mu);
  initialized = true;
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult cuDriverGetVersion(int* version) {
  if (version == nullptr) return kInvalidValue;
  *version = 12080;
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult cuDeviceGet(int* device, int ordinal) {
  if (!initialized) return kNotInitialized;
  if (device == nullptr) return kInvalidValue;
  if (!ValidDevice(ordinal)) return kInvalidDevice;
  *device = ordinal;
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult cuDeviceGetByPCIBusId(int* device,
                                                                      const char* bus_id) {
  if (!initialized) return kNotInitialized;
  if (device == nullptr || bus_id == nullptr) return kInvalidValue;
  for (size_t i = 0; i < Devices().size(); ++i) {
    if (SameBusId(Devices()[i], bus_id)) {
      *device = static_cast<int>(i);
      return kSuccess;
    }
  }
  return kInvalidDevice;
}

__attribute__((visibility("default"))) CUresult cuDeviceGetName(char* name, int len, int device) {
  if (name == nullptr || len <= 0) return kInvalidValue;
  if (!ValidDevice(device)) return kInvalidDevice;
  std::strncpy(name, "Fake CUDA Device", static_cast<size_t>(len) - 1);
  name[len - 1] = '\0';
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult cuCtxCreate_v2(void** ctx, unsigned int,
                                                               int device) {
  if (!initialized) return kNotInitialized;
  if (ctx == nullptr) return kInvalidValue;
  if (!ValidDevice(device)) return kInvalidDevice;
  if (Fault("not-ready")) return kSystemNotReady;
  std::lock_guard lock(mu);
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
