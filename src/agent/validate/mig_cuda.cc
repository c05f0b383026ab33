#include "agent/validate/mig_cuda.h"

#include <stdlib.h>

#include "absl/strings/str_cat.h"
#include "common/process.h"
#include "hw/cuda/cuda_validator.h"

namespace gpuop::agent {

MigCudaRunner SubprocessMigCudaRunner(std::vector<std::string> argv, absl::Duration timeout) {
  return [argv = std::move(argv), timeout](const std::string& uuid) -> absl::StatusOr<std::string> {
    std::vector<std::string> command = argv;
    command.push_back("--device=" + uuid);
    absl::StatusOr<common::CapturedRun> run = common::RunCaptured({.argv = command}, timeout);
    if (!run.ok()) return run.status();
    if (!run->exited_zero) {
      return absl::FailedPreconditionError(absl::StrCat(run->ended, ": ", run->output));
    }
    return run->output;
  };
}

absl::StatusOr<std::string> RunVectorAddOn(const std::string& device, const std::string& library) {
  // CUDA reads it once, at cuInit; nothing in this process has loaded CUDA yet.
  setenv("CUDA_VISIBLE_DEVICES", device.c_str(), 1);
  absl::StatusOr<hw::CudaValidationResult> result =
      hw::ValidateCuda({.library_path = library, .ordinal = 0});
  if (!result.ok()) return result.status();
  return absl::StrCat("vector add on ", result->device_name);
}

}  // namespace gpuop::agent
