#ifndef GPUOP_HW_NVML_NVIDIA_SMI_H_
#define GPUOP_HW_NVML_NVIDIA_SMI_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace gpuop::hw {

// What only nvidia-smi does, run the way NVIDIA's mig-manager runs it: from the driver's own root
// (chrooted there), so it finds the driver's libraries and the GPUs' device nodes.
//  - A GPU reset: `nvidia-smi -r -i <bus id>,<bus id>` (NVML itself has no reset call).
//  - The device nodes of new MIG instances: plain `nvidia-smi`, run as root, has the driver's
//    user space create /dev/nvidia-caps/nvidia-cap<N> for every GPU and compute instance in the
//    driver's /dev. A container runtime can give a MIG device to a container only once those
//    nodes exist, so NVIDIA's mig-manager runs it after every change (mig-parted #82).
struct NvidiaSmi {
  // The root nvidia-smi runs in: the driver container's root or the host's, as this process
  // sees it ("/host/run/nvidia/driver"); empty runs `program` without chroot.
  std::string root;
  std::string program = "/usr/bin/nvidia-smi";
  absl::Duration timeout = absl::Minutes(2);

  // OK when nvidia-smi exits 0. FailedPrecondition naming the command, how it ended and what it
  // printed (the GPUs still in use, for a refused reset); DeadlineExceeded after `timeout`.
  [[nodiscard]] absl::Status Reset(const std::vector<std::string>& pci_bus_ids) const;
  // Runs plain nvidia-smi. Errors as Reset's.
  [[nodiscard]] absl::Status CreateDeviceNodes() const;

 private:
  absl::Status Run(const std::vector<std::string>& args) const;
};

}  // namespace gpuop::hw

#endif  // GPUOP_HW_NVML_NVIDIA_SMI_H_
