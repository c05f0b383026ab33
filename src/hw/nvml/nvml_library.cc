#include "hw/nvml/nvml_library.h"

#include <vector>

#include <dlfcn.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gpuop::hw {

absl::StatusCode NvmlStatusCode(nvmlReturn_t code) {
  switch (code) {
    case NVML_SUCCESS:
      return absl::StatusCode::kOk;
    case NVML_ERROR_INVALID_ARGUMENT:
      return absl::StatusCode::kInvalidArgument;
    case NVML_ERROR_NOT_SUPPORTED:
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return absl::StatusCode::kUnimplemented;
    case NVML_ERROR_NO_PERMISSION:
      return absl::StatusCode::kPermissionDenied;
    case NVML_ERROR_NOT_FOUND:
    case NVML_ERROR_GPU_NOT_FOUND:
      return absl::StatusCode::kNotFound;
    case NVML_ERROR_TIMEOUT:
      return absl::StatusCode::kDeadlineExceeded;
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
    case NVML_ERROR_MEMORY:
      return absl::StatusCode::kResourceExhausted;
    case NVML_ERROR_UNINITIALIZED:
    case NVML_ERROR_DRIVER_NOT_LOADED:
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
    case NVML_ERROR_IN_USE:
    case NVML_ERROR_RESET_REQUIRED:
    case NVML_ERROR_NOT_READY:
    case NVML_ERROR_INVALID_STATE:
      return absl::StatusCode::kFailedPrecondition;
    case NVML_ERROR_GPU_IS_LOST:
      return absl::StatusCode::kUnavailable;
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return absl::StatusCode::kOutOfRange;
    default:
      return absl::StatusCode::kInternal;
  }
}

absl::StatusOr<std::unique_ptr<NvmlLibrary>> NvmlLibrary::Load(const std::string& path) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return absl::NotFoundError(absl::StrCat("NVML: cannot load ", path, ": ",
                                            why != nullptr ? why : "unknown dlopen error"));
  }
  std::unique_ptr<NvmlLibrary> lib(new NvmlLibrary(handle, path));
  std::vector<std::string> missing;
#define GPUOP_NVML_REQUIRED(name, params)                                          \
  lib->fn_.name = reinterpret_cast<decltype(lib->fn_.name)>(dlsym(handle, #name)); \
  if (lib->fn_.name == nullptr) missing.push_back(#name);
#define GPUOP_NVML_OPTIONAL(name, params) \
  lib->fn_.name = reinterpret_cast<decltype(lib->fn_.name)>(dlsym(handle, #name));
  GPUOP_NVML_REQUIRED_FUNCTIONS(GPUOP_NVML_REQUIRED)
  GPUOP_NVML_OPTIONAL_FUNCTIONS(GPUOP_NVML_OPTIONAL)
#undef GPUOP_NVML_REQUIRED
#undef GPUOP_NVML_OPTIONAL
  lib->fn_.nvmlErrorString = reinterpret_cast<nvmlErrorString_fn>(dlsym(handle, "nvmlErrorString"));
  if (!missing.empty()) {
    // Not an NVML we can use; the destructor must not call nvmlShutdown.
    lib->fn_.nvmlShutdown = nullptr;
    return absl::FailedPreconditionError(
        absl::StrCat("NVML: ", path, " lacks required functions: ", absl::StrJoin(missing, ", ")));
  }
  const nvmlReturn_t init = lib->fn_.nvmlInit_v2();
  if (init != NVML_SUCCESS) {
    const std::string text = lib->ErrorString(init);
    lib->fn_.nvmlShutdown = nullptr;
    return absl::FailedPreconditionError(
        absl::StrCat("nvmlInit_v2 (", path, "): ", text, " (", init, ")"));
  }
  return lib;
}

NvmlLibrary::~NvmlLibrary() {
  if (fn_.nvmlShutdown != nullptr) fn_.nvmlShutdown();
  dlclose(handle_);
}

absl::Status NvmlLibrary::WhileReleased(const std::function<absl::Status()>& released) {
  if (fn_.nvmlShutdown == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("NVML (", path_, ") is not initialised"));
  }
  fn_.nvmlShutdown();
  absl::Status status = released();
  const nvmlReturn_t init = fn_.nvmlInit_v2();
  if (init == NVML_SUCCESS) return status;
  fn_.nvmlShutdown = nullptr;  // not initialised: the destructor must not shut it down
  status.Update(absl::FailedPreconditionError(absl::StrCat(
      "nvmlInit_v2 (", path_, ") after the reset: ", ErrorString(init), " (", init, ")")));
  return status;
}

std::string NvmlLibrary::ErrorString(nvmlReturn_t code) const {
  if (fn_.nvmlErrorString != nullptr) {
    if (const char* text = fn_.nvmlErrorString(code)) return text;
  }
  return absl::StrCat("NVML error ", code);
}

absl::Status NvmlLibrary::Check(nvmlReturn_t code, absl::string_view call,
                                absl::string_view subject) const {
  if (code == NVML_SUCCESS) return absl::OkStatus();
  return absl::Status(NvmlStatusCode(code),
                      absl::StrCat(call, "(", subject, "): ", ErrorString(code)));
}

}  // namespace gpuop::hw
