#ifndef GPUOP_HW_ACCELERATOR_H_
#define GPUOP_HW_ACCELERATOR_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hw/model.h"

namespace gpuop::hw {

// Who may create contexts on a GPU (NVIDIA's compute modes): anyone (kDefault), one process at a
// time (kExclusiveProcess; MPS sharing runs every client through its one server process), or
// nobody (kProhibited).
enum class ComputeMode { kDefault, kExclusiveProcess, kProhibited };
// NVIDIA's names: DEFAULT, EXCLUSIVE_PROCESS, PROHIBITED.
inline std::string ComputeModeName(ComputeMode mode) {
  switch (mode) {
    case ComputeMode::kDefault:
      break;
    case ComputeMode::kExclusiveProcess:
      return "EXCLUSIVE_PROCESS";
    case ComputeMode::kProhibited:
      return "PROHIBITED";
  }
  return "DEFAULT";
}

// One vendor's view of the node's accelerators. Backends: NVIDIA over NVML (hw/nvml), AMD over
// sysfs (hw/amd). A node with no GPUs of the vendor gets an empty Inventory, not an error.
//
// Errors name the vendor library function and the device ("nvmlDeviceGetPowerUsage(GPU 3):
// GPU is lost"). Thread-safe unless an implementation says otherwise.
class Accelerator {
 public:
  virtual ~Accelerator() = default;

  virtual Vendor vendor() const = 0;

  // Identity, capabilities, MIG layout and topology. Changes only with MIG reconfiguration,
  // driver reloads and hot plug, so callers cache it.
  [[nodiscard]] virtual absl::StatusOr<Inventory> Discover() = 0;

  // One telemetry sample of every GPU. A lost GPU yields a sample with `lost` set.
  [[nodiscard]] virtual absl::StatusOr<Sample> TakeSample() = 0;

  // Waits up to `timeout` for hardware events (XIDs, ECC, GPU lost) and returns those that
  // arrived, possibly none. Unimplemented where the vendor has no event source.
  [[nodiscard]] virtual absl::StatusOr<std::vector<HardwareEvent>> WaitEvents(
      absl::Duration timeout) = 0;

  // Control. Unimplemented where the vendor does not support the operation.
  [[nodiscard]] virtual absl::Status SetPowerLimit(int gpu_index, double watts) = 0;
  // Requests MIG mode on or off; returns true when the change needs a GPU reset to apply.
  [[nodiscard]] virtual absl::StatusOr<bool> SetMigMode(int gpu_index, bool enabled) = 0;
  // Resets the GPUs `gpu_indexes` (nvidia-smi -r), which is what makes a pending MIG mode take
  // effect and clears a GPU's error state. The driver refuses while any process holds one of
  // them, this one included: a backend releases its own handle on the driver for the reset.
  // FailedPrecondition (naming what the reset tool said) when refused; Unimplemented where the
  // backend cannot reset.
  [[nodiscard]] virtual absl::Status ResetGpus(const std::vector<int>& gpu_indexes) {
    (void)gpu_indexes;
    return absl::UnimplementedError("this accelerator cannot reset GPUs");
  }
  // Has the driver create the device nodes of the MIG instances that exist (NVIDIA: nvidia-smi
  // in the driver's root creates /dev/nvidia-caps/nvidia-cap<N>), which a container runtime
  // needs to give a MIG device to a container; the MIG manager calls it after a change.
  // Unimplemented where the backend has no such step.
  [[nodiscard]] virtual absl::Status CreateMigDeviceNodes() {
    return absl::UnimplementedError("this accelerator creates no MIG device nodes");
  }
  // Creates a GPU instance of `profile` ("3g.40gb") and one compute instance filling it, or, for
  // "<c>c.<profile>" ("1c.3g.40gb", hw/mig_profile.h), one compute instance of c slices in it;
  // returns the new MIG device.
  [[nodiscard]] virtual absl::StatusOr<MigDevice> CreateMigDevice(int gpu_index,
                                                                  const std::string& profile) = 0;
  // Destroys the compute instance and GPU instance of a MIG device.
  [[nodiscard]] virtual absl::Status DestroyMigDevice(int gpu_index,
                                                      unsigned int gpu_instance_id) = 0;
  // The GPU's compute mode (NVIDIA: EXCLUSIVE_PROCESS under MPS sharing). Unimplemented unless
  // the backend has compute modes.
  [[nodiscard]] virtual absl::Status SetComputeMode(int gpu_index, ComputeMode mode) {
    (void)gpu_index;
    (void)mode;
    return absl::UnimplementedError("compute modes are NVIDIA's");
  }
  [[nodiscard]] virtual absl::StatusOr<ComputeMode> GetComputeMode(int gpu_index) {
    (void)gpu_index;
    return absl::UnimplementedError("compute modes are NVIDIA's");
  }
};

}  // namespace gpuop::hw

#endif  // GPUOP_HW_ACCELERATOR_H_
