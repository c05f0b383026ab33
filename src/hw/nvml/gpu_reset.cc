#include "hw/nvml/gpu_reset.h"

#include <filesystem>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/files.h"
#include "common/process.h"

namespace gpuop::hw {

absl::Status NvidiaSmiReset::Reset(const std::vector<std::string>& pci_bus_ids) const {
  if (pci_bus_ids.empty()) return absl::OkStatus();
  const std::string ids = absl::StrJoin(pci_bus_ids, ",");
  const std::string command = absl::StrCat(program, " -r -i ", ids);
  const std::filesystem::path output =
      std::filesystem::temp_directory_path() /
      absl::StrCat("gpuop-gpu-reset-", getpid(), "-", absl::ToUnixNanos(absl::Now()));
  absl::StatusOr<common::Subprocess> child = common::Subprocess::Spawn(
      {.argv = {program, "-r", "-i", ids}, .output_path = output, .root = root});
  if (!child.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(command, root.empty() ? "" : absl::StrCat(" (in ", root, ")"), ": ",
                     child.status().message()));
  }
  absl::StatusOr<int> waited = child->Wait(timeout);
  absl::StatusOr<std::string> printed = common::ReadFile(output);
  std::error_code ignored;
  std::filesystem::remove(output, ignored);
  const std::string said =
      printed.ok() ? std::string(absl::StripAsciiWhitespace(*printed)) : std::string();
  if (!waited.ok()) {
    (void)child->Stop(absl::Seconds(5));
    return absl::DeadlineExceededError(
        absl::StrCat(command, ": still running after ", absl::FormatDuration(timeout)));
  }
  if (*waited == 0) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(command, ": ", child->DescribeExit(),
                                                    said.empty() ? "" : absl::StrCat(": ", said)));
}

}  // namespace gpuop::hw
