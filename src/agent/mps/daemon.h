#ifndef GPUOP_AGENT_MPS_DAEMON_H_
#define GPUOP_AGENT_MPS_DAEMON_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "agent/mps/control.h"
#include "agent/mps/root.h"
#include "hw/accelerator.h"

namespace gpuop::agent::mps {

// One GPU a resource shares with MPS.
struct SharedGpu {
  int index = 0;  // the NVML index, as NVIDIA's daemon names the GPU to the control program
  std::string uuid;
  uint64_t memory_bytes = 0;
  int replicas = 1;
};

// The MPS control daemon of one resource, as NVIDIA's mps-control-daemon runs it
// (cmd/mps-control-daemon/mps/daemon.go).
//
// Start: every GPU to compute mode EXCLUSIVE_PROCESS (through NVML), the pipe and log
// directories under the root, `nvidia-cuda-mps-control -d`, then through the control program
// `set_default_device_pinned_mem_limit <index> <MiB>M` per GPU (its memory / its replicas, in
// MiB) and `set_default_active_thread_percentage <100 / replicas>`, and the .started file.
// Stop: `quit`, compute mode DEFAULT again, the .started file and the log directory removed.
// Healthy: `get_default_active_thread_percentage` answers.
//
// Not thread-safe; one owner drives it.
class Daemon {
 public:
  Daemon(std::string resource, std::vector<SharedGpu> gpus, Root root, hw::Accelerator& gpu_control,
         ControlProgram& control);

  const std::string& resource() const { return resource_; }
  const std::vector<SharedGpu>& gpus() const { return gpus_; }

  // Errors name the resource and the step; a GPU whose mode was set stays so (Stop resets it).
  [[nodiscard]] absl::Status Start();
  // Does every step even when one fails; returns the first failure.
  [[nodiscard]] absl::Status Stop();
  [[nodiscard]] absl::Status CheckHealthy();

  // The per-GPU pinned memory limits and the thread percentage Start sets: "<index> <MiB>M" for
  // each GPU with a known memory size, and 100 / the most replicas any of its GPUs has
  // (NVIDIA's daemon assumes one replica count per resource; gpuop's rules may give its GPUs
  // different ones, and the smallest share is the safe default for all).
  std::vector<std::string> PinnedMemoryLimits() const;
  int ActiveThreadPercentage() const;

 private:
  ControlDirs Dirs() const;
  absl::Status SetComputeModes(hw::ComputeMode mode);

  const std::string resource_;
  const std::vector<SharedGpu> gpus_;
  const Root root_;
  hw::Accelerator& gpu_control_;
  ControlProgram& control_;
};

}  // namespace gpuop::agent::mps

#endif  // GPUOP_AGENT_MPS_DAEMON_H_
