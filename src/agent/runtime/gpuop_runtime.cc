#include "agent/runtime/gpuop_runtime.h"

#include "absl/strings/str_cat.h"
#include "common/files.h"
#include "common/status_macros.h"

namespace gpuop::agent::runtime {

namespace {

// The binary's host path is joined under the host root: it must be a clean absolute path, which
// ValidateOptions checks only where the handler is asked for.
absl::Status Validate(Options options) {
  options.add_gpuop_runtime = true;
  return ValidateOptions(options);
}

}  // namespace

absl::StatusOr<bool> InstallGpuopRuntime(const HostFiles& files,
                                         const std::filesystem::path& source,
                                         const Options& options) {
  GPUOP_RETURN_IF_ERROR(Validate(options));
  return common::InstallExecutable(
      source, files.Resolve(options.gpuop_runtime_binary),
      absl::StrCat(kGpuopRuntimeProgram, " (gpuop's runtime handler)"));
}

absl::StatusOr<bool> RemoveGpuopRuntime(const HostFiles& files, const Options& options) {
  GPUOP_RETURN_IF_ERROR(Validate(options));
  if (!files.Exists(options.gpuop_runtime_binary)) return false;
  GPUOP_RETURN_IF_ERROR(files.Remove(options.gpuop_runtime_binary));
  return true;
}

}  // namespace gpuop::agent::runtime
