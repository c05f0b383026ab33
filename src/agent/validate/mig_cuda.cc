#include "agent/validate/mig_cuda.h"

#include <filesystem>

#include <stdlib.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/files.h"
#include "common/process.h"
#include "hw/cuda/cuda_validator.h"

namespace gpuop::agent {

MigCudaRunner SubprocessMigCudaRunner(std::vector<std::string> argv, absl::Duration timeout) {
  return [argv = std::move(argv), timeout](const std::string& uuid) -> absl::StatusOr<std::string> {
    std::vector<std::string> command = argv;
    command.push_back("--device=" + uuid);
    const std::filesystem::path output =
        std::filesystem::temp_directory_path() /
        absl::StrCat("gpuop-mig-cuda-", getpid(), "-", absl::ToUnixNanos(absl::Now()));
    absl::StatusOr<common::Subprocess> child =
        common::Subprocess::Spawn({.argv = command, .output_path = output});
    if (!child.ok()) return child.status();
    absl::StatusOr<int> waited = child->Wait(timeout);
    absl::StatusOr<std::string> printed = common::ReadFile(output);
    std::error_code ignored;
    std::filesystem::remove(output, ignored);
    const std::string said =
        printed.ok() ? std::string(absl::StripAsciiWhitespace(*printed)) : std::string();
    if (!waited.ok()) {
      (void)child->Stop(absl::Seconds(5));
      return absl::DeadlineExceededError(
          absl::StrCat("the vector add did not finish within ", absl::FormatDuration(timeout)));
    }
    if (*waited != 0) {
      return absl::FailedPreconditionError(absl::StrCat(child->DescribeExit(), ": ", said));
    }
    return said;
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
