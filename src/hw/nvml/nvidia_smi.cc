#include "hw/nvml/nvidia_smi.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/process.h"

namespace gpuop::hw {

absl::Status NvidiaSmi::Reset(const std::vector<std::string>& pci_bus_ids) const {
  if (pci_bus_ids.empty()) return absl::OkStatus();
  return Run({"-r", "-i", absl::StrJoin(pci_bus_ids, ",")});
}

absl::Status NvidiaSmi::CreateDeviceNodes() const { return Run({}); }

absl::Status NvidiaSmi::Run(const std::vector<std::string>& args) const {
  const std::string command =
      args.empty() ? program : absl::StrCat(program, " ", absl::StrJoin(args, " "));
  std::vector<std::string> argv = {program};
  argv.insert(argv.end(), args.begin(), args.end());
  absl::StatusOr<common::CapturedRun> run =
      common::RunCaptured({.argv = argv, .root = root}, timeout);
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
