#include "hw/nvml/gpu_reset.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/process.h"

namespace gpuop::hw {

absl::Status NvidiaSmiReset::Reset(const std::vector<std::string>& pci_bus_ids) const {
  if (pci_bus_ids.empty()) return absl::OkStatus();
  const std::string ids = absl::StrJoin(pci_bus_ids, ",");
  const std::string command = absl::StrCat(program, " -r -i ", ids);
  absl::StatusOr<common::CapturedRun> run =
      common::RunCaptured({.argv = {program, "-r", "-i", ids}, .root = root}, timeout);
  if (!run.ok()) {
    if (absl::IsDeadlineExceeded(run.status())) {
      return absl::DeadlineExceededError(
          absl::StrCat(command, ": still running after ", absl::FormatDuration(timeout)));
    }
    return absl::FailedPreconditionError(
        absl::StrCat(command, root.empty() ? "" : absl::StrCat(" (in ", root, ")"), ": ",
                     run.status().message()));
  }
  if (run->exited_zero) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      command, ": ", run->ended, run->output.empty() ? "" : absl::StrCat(": ", run->output)));
}

}  // namespace gpuop::hw
