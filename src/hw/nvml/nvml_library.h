#ifndef GPUOP_HW_NVML_NVML_LIBRARY_H_
#define GPUOP_HW_NVML_NVML_LIBRARY_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hw/nvml/nvml_functions.h"

namespace gpuop::hw {

// The NVML entry points of one loaded library. Required ones are never null; an optional one is
// null when the library lacks it (an older driver), which callers treat as NOT_SUPPORTED.
struct NvmlFunctions {
#define GPUOP_NVML_POINTER(name, params) nvmlReturn_t(*name) params = nullptr;
  GPUOP_NVML_REQUIRED_FUNCTIONS(GPUOP_NVML_POINTER)
  GPUOP_NVML_OPTIONAL_FUNCTIONS(GPUOP_NVML_POINTER)
#undef GPUOP_NVML_POINTER
  nvmlErrorString_fn nvmlErrorString = nullptr;
};

// libnvidia-ml loaded with dlopen and initialised. Nothing in gpuop links against NVML, so one
// binary runs on nodes with and without NVIDIA drivers.
//
// Thread-safe (NVML is).
class NvmlLibrary {
 public:
  // Opens `path` (the soname "libnvidia-ml.so.1" searches the usual library path; a full path
  // picks a driver root or the fake), resolves the entry points and calls nvmlInit_v2.
  // NotFound when the library is not there; FailedPrecondition when it cannot initialise (no
  // driver loaded, version mismatch), naming the NVML error.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<NvmlLibrary>> Load(const std::string& path);

  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;
  // nvmlShutdown, then dlclose.
  ~NvmlLibrary();

  const NvmlFunctions& fn() const { return fn_; }
  const std::string& path() const { return path_; }

  // Shuts NVML down (the last reference: NVML no longer holds the driver's device nodes), runs
  // `released`, and initialises NVML again; handles from before are invalid afterwards. Returns
  // the result of `released`, or, when that was OK, the failure to initialise again. Not to be
  // called while another thread is in an NVML call.
  [[nodiscard]] absl::Status WhileReleased(const std::function<absl::Status()>& released);

  // NVML's text for a return code.
  std::string ErrorString(nvmlReturn_t code) const;

  // OK for NVML_SUCCESS; otherwise a Status whose message names the call and the subject:
  // "nvmlDeviceGetPowerUsage(GPU 3): GPU is lost".
  absl::Status Check(nvmlReturn_t code, absl::string_view call, absl::string_view subject) const;

 private:
  NvmlLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}

  void* handle_;
  std::string path_;
  NvmlFunctions fn_;
};

// The absl code for an NVML return code.
absl::StatusCode NvmlStatusCode(nvmlReturn_t code);

}  // namespace gpuop::hw

#endif  // GPUOP_HW_NVML_NVML_LIBRARY_H_
