#ifndef GPUOP_AGENT_MIG_FORWARDING_ACCELERATOR_H_
#define GPUOP_AGENT_MIG_FORWARDING_ACCELERATOR_H_

#include <string>
#include <vector>

#include "hw/accelerator.h"

namespace gpuop::agent::mig {

// An Accelerator that forwards every call to another one, so a test overrides a single method
// to inject a fault (a reset the driver defers, a call that blocks) into a real backend.
class ForwardingAccelerator : public hw::Accelerator {
 public:
  explicit ForwardingAccelerator(hw::Accelerator& target) : target_(target) {}

  hw::Vendor vendor() const override { return target_.vendor(); }
  [[nodiscard]] absl::StatusOr<hw::Inventory> Discover() override { return target_.Discover(); }
  [[nodiscard]] absl::StatusOr<hw::Sample> TakeSample() override { return target_.TakeSample(); }
  [[nodiscard]] absl::StatusOr<std::vector<hw::HardwareEvent>> WaitEvents(
      absl::Duration timeout) override {
    return target_.WaitEvents(timeout);
  }
  [[nodiscard]] absl::Status SetPowerLimit(int gpu_index, double watts) override {
    return target_.SetPowerLimit(gpu_index, watts);
  }
  [[nodiscard]] absl::StatusOr<bool> SetMigMode(int gpu_index, bool enabled) override {
    return target_.SetMigMode(gpu_index, enabled);
  }
  [[nodiscard]] absl::StatusOr<hw::MigDevice> CreateMigDevice(int gpu_index,
                                                              const std::string& profile) override {
    return target_.CreateMigDevice(gpu_index, profile);
  }
  [[nodiscard]] absl::Status DestroyMigDevice(int gpu_index,
                                              unsigned int gpu_instance_id) override {
    return target_.DestroyMigDevice(gpu_index, gpu_instance_id);
  }
  [[nodiscard]] absl::Status CreateMigDeviceNodes() override {
    return target_.CreateMigDeviceNodes();
  }
  [[nodiscard]] absl::Status SetComputeMode(int gpu_index, hw::ComputeMode mode) override {
    return target_.SetComputeMode(gpu_index, mode);
  }
  [[nodiscard]] absl::StatusOr<hw::ComputeMode> GetComputeMode(int gpu_index) override {
    return target_.GetComputeMode(gpu_index);
  }

 protected:
  hw::Accelerator& target_;
};

}  // namespace gpuop::agent::mig

#endif  // GPUOP_AGENT_MIG_FORWARDING_ACCELERATOR_H_
