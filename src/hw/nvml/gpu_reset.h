#ifndef GPUOP_HW_NVML_GPU_RESET_H_
#define GPUOP_HW_NVML_GPU_RESET_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace gpuop::hw {

// A GPU reset the way NVIDIA's tools do it: `nvidia-smi -r -i <bus id>,<bus id>` (NVML itself
// has no reset call). nvidia-smi runs from the driver's own root (chrooted there, as NVIDIA's
// mig-manager runs it), so it finds the driver's libraries and the GPUs' device nodes.
struct NvidiaSmiReset {
  // The root nvidia-smi runs in: the driver container's root or the host's, as this process
  // sees it ("/host/run/nvidia/driver"); empty runs `program` without chroot.
  std::string root;
  std::string program = "/usr/bin/nvidia-smi";
  absl::Duration timeout = absl::Minutes(2);

  // OK when nvidia-smi exits 0. FailedPrecondition naming the command, how it ended and what it
  // printed (the GPUs still in use, for a refused reset); DeadlineExceeded after `timeout`.
  [[nodiscard]] absl::Status Reset(const std::vector<std::string>& pci_bus_ids) const;
};

}  // namespace gpuop::hw

#endif  // GPUOP_HW_NVML_GPU_RESET_H_
