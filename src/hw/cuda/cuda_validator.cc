#include "hw/cuda/cuda_validator.h"

#include <cmath>
#include <functional>
#include <vector>

#include <dlfcn.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace gpuop::hw {
namespace {

// The CUDA driver ABI used here (cuda.h, CUDA 12/13); declared locally so nothing links
// against libcuda. Versioned names are requested explicitly: the unversioned exports are
// legacy 32-bit variants.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
using CUcontext = CUctx_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;
constexpr CUresult kCudaSuccess = 0;
constexpr int kBlockSize = 256;

struct CudaApi {
  CUresult (*cuInit)(unsigned int) = nullptr;
  CUresult (*cuDriverGetVersion)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetByPCIBusId)(CUdevice*, const char*) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*cuCtxCreate_v2)(CUcontext*, unsigned int, CUdevice) = nullptr;
  CUresult (*cuCtxDestroy_v2)(CUcontext) = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*cuMemAlloc_v2)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*cuMemFree_v2)(CUdeviceptr) = nullptr;
  CUresult (*cuMemcpyHtoD_v2)(CUdeviceptr, const void*, size_t) = nullptr;
  CUresult (*cuMemcpyDtoH_v2)(void*, CUdeviceptr, size_t) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
                             unsigned int, unsigned int, unsigned int, void*, void**,
                             void**) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char**) = nullptr;
};

// Runs cleanups in reverse order when it goes out of scope.
class Cleanup {
 public:
  ~Cleanup() {
    for (auto it = steps_.rbegin(); it != steps_.rend(); ++it) (*it)();
  }
  void Add(std::function<void()> step) { steps_.push_back(std::move(step)); }

 private:
  std::vector<std::function<void()>> steps_;
};

class Validator {
 public:
  Validator(void* lib, std::string subject) : lib_(lib), subject_(std::move(subject)) {}

  absl::Status Resolve() {
    std::vector<std::string> missing;
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib_, name));
      if (fn == nullptr) missing.push_back(name);
    };
    sym(api_.cuInit, "cuInit");
    sym(api_.cuDriverGetVersion, "cuDriverGetVersion");
    sym(api_.cuDeviceGet, "cuDeviceGet");
    sym(api_.cuDeviceGetByPCIBusId, "cuDeviceGetByPCIBusId");
    sym(api_.cuDeviceGetName, "cuDeviceGetName");
    sym(api_.cuCtxCreate_v2, "cuCtxCreate_v2");
    sym(api_.cuCtxDestroy_v2, "cuCtxDestroy_v2");
    sym(api_.cuModuleLoadData, "cuModuleLoadData");
    sym(api_.cuModuleUnload, "cuModuleUnload");
    sym(api_.cuModuleGetFunction, "cuModuleGetFunction");
    sym(api_.cuMemAlloc_v2, "cuMemAlloc_v2");
    sym(api_.cuMemFree_v2, "cuMemFree_v2");
    sym(api_.cuMemcpyHtoD_v2, "cuMemcpyHtoD_v2");
    sym(api_.cuMemcpyDtoH_v2, "cuMemcpyDtoH_v2");
    sym(api_.cuLaunchKernel, "cuLaunchKernel");
    sym(api_.cuCtxSynchronize, "cuCtxSynchronize");
    sym(api_.cuGetErrorName, "cuGetErrorName");
    if (missing.empty()) return absl::OkStatus();
    std::string list;
    for (const auto& m : missing) absl::StrAppend(&list, list.empty() ? "" : ", ", m);
    return absl::FailedPreconditionError(absl::StrCat("libcuda lacks ", list));
  }

  absl::Status Check(CUresult rc, const char* call) const {
    if (rc == kCudaSuccess) return absl::OkStatus();
    const char* name = nullptr;
    if (api_.cuGetErrorName == nullptr || api_.cuGetErrorName(rc, &name) != kCudaSuccess ||
        name == nullptr) {
      name = "unknown CUDA error";
    }
    return absl::FailedPreconditionError(
        absl::StrCat(call, "(", subject_, "): ", name, " (", rc, ")"));
  }

  absl::StatusOr<CudaValidationResult> Run(const CudaValidationOptions& options) {
    CudaValidationResult result{.ordinal = options.ordinal, .elements = options.elements};
    const absl::Time start = absl::Now();
#define GPUOP_CU(call, ...) \
  if (absl::Status s = Check(api_.call(__VA_ARGS__), #call); !s.ok()) return s
    GPUOP_CU(cuInit, 0);
    GPUOP_CU(cuDriverGetVersion, &result.driver_version);
    CUdevice device = 0;
    if (!options.pci_bus_id.empty()) {
      GPUOP_CU(cuDeviceGetByPCIBusId, &device, options.pci_bus_id.c_str());
      result.ordinal = device;
    } else {
      GPUOP_CU(cuDeviceGet, &device, options.ordinal);
    }
    char name[256] = {0};
    GPUOP_CU(cuDeviceGetName, name, static_cast<int>(sizeof(name)), device);
    result.device_name = name;

    Cleanup cleanup;
    CUcontext context = nullptr;
    GPUOP_CU(cuCtxCreate_v2, &context, 0, device);
    cleanup.Add([this, context] { api_.cuCtxDestroy_v2(context); });
    CUmodule module = nullptr;
    GPUOP_CU(cuModuleLoadData, &module, VectorAddPtx());
    cleanup.Add([this, module] { api_.cuModuleUnload(module); });
    CUfunction kernel = nullptr;
    GPUOP_CU(cuModuleGetFunction, &kernel, module, "vector_add");

    const size_t n = static_cast<size_t>(options.elements);
    const size_t bytes = n * sizeof(float);
    std::vector<float> a(n), b(n), c(n, -1.0f);
    for (size_t i = 0; i < n; ++i) {
      a[i] = static_cast<float>(i % 1000) * 0.5f;
      b[i] = static_cast<float>(i % 997) * 2.0f;
    }
    CUdeviceptr da = 0, db = 0, dc = 0;
    for (CUdeviceptr* p : {&da, &db, &dc}) {
      GPUOP_CU(cuMemAlloc_v2, p, bytes);
      cleanup.Add([this, ptr = *p] { api_.cuMemFree_v2(ptr); });
    }
    GPUOP_CU(cuMemcpyHtoD_v2, da, a.data(), bytes);
    GPUOP_CU(cuMemcpyHtoD_v2, db, b.data(), bytes);
    unsigned int count = static_cast<unsigned int>(n);
    void* params[] = {&da, &db, &dc, &count};
    const unsigned int blocks = static_cast<unsigned int>((n + kBlockSize - 1) / kBlockSize);
    GPUOP_CU(cuLaunchKernel, kernel, blocks, 1, 1, kBlockSize, 1, 1, 0, nullptr, params, nullptr);
    GPUOP_CU(cuCtxSynchronize);
    GPUOP_CU(cuMemcpyDtoH_v2, c.data(), dc, bytes);
#undef GPUOP_CU
    for (size_t i = 0; i < n; ++i) {
      if (c[i] != a[i] + b[i]) {
        return absl::DataLossError(absl::StrCat("vector add on ", subject_, ": element ", i, " is ",
                                                c[i], ", expected ", a[i] + b[i]));
      }
    }
    result.elapsed = absl::Now() - start;
    return result;
  }

 private:
  void* lib_;
  std::string subject_;
  CudaApi api_;
};

}  // namespace

absl::StatusOr<CudaValidationResult> ValidateCuda(const CudaValidationOptions& options) {
  if (options.elements <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("CUDA validation: elements must be positive, not ", options.elements));
  }
  dlerror();
  void* lib = dlopen(options.library_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    return absl::NotFoundError(
        absl::StrCat("CUDA driver library ", options.library_path,
                     " not found (is the NVIDIA driver installed?): ", why != nullptr ? why : ""));
  }
  const std::string subject = options.pci_bus_id.empty() ? absl::StrCat("GPU ", options.ordinal)
                                                         : absl::StrCat("GPU ", options.pci_bus_id);
  absl::StatusOr<CudaValidationResult> result;
  {
    Validator validator(lib, subject);
    absl::Status resolved = validator.Resolve();
    result = resolved.ok() ? validator.Run(options) : resolved;
  }
  dlclose(lib);
  return result;
}

}  // namespace gpuop::hw
