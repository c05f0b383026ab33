#ifndef GPUOP_HW_NVML_NVML_ACCELERATOR_TEST_UTIL_H_
#define GPUOP_HW_NVML_NVML_ACCELERATOR_TEST_UTIL_H_

// The fixture of NvmlAccelerator's tests: the real backend on the fake libnvidia-ml.so.1
// (GPUOP_FAKE_NVML_LIBRARY), a preset scenario, an optional control file and an HGX sysfs tree.

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include "hw/nvml/nvml_accelerator.h"
#include "test/fakes/sysfs/presets.h"

namespace gpuop::hw {

class NvmlAcceleratorTest : public ::testing::Test {
 protected:
  void TearDown() override {
    nvml_.reset();
    unsetenv("GPUOP_FAKE_NVML_SCENARIO");
    unsetenv("GPUOP_FAKE_NVML_CONTROL");
    if (!control_.empty()) std::filesystem::remove(control_);
    if (!sysfs_.empty()) std::filesystem::remove_all(sysfs_);
  }

  // Opens the fake machine `scenario` (a preset name).
  void Open(const char* scenario, bool with_control = false,
            std::function<absl::Status(const std::vector<std::string>&)> reset = nullptr) {
    setenv("GPUOP_FAKE_NVML_SCENARIO", scenario, 1);
    if (with_control) {
      control_ = std::filesystem::temp_directory_path() /
                 ("gpuop-nvml-control-" + std::to_string(getpid()));
      std::ofstream(control_, std::ios::trunc).flush();
      setenv("GPUOP_FAKE_NVML_CONTROL", control_.c_str(), 1);
    }
    // The PCI bus of an HGX H100 board (the h100-8x-nvswitch scenario's addresses): the NUMA
    // affinity comes from there, not from NVML.
    sysfs_ =
        std::filesystem::temp_directory_path() / ("gpuop-nvml-sysfs-" + std::to_string(getpid()));
    std::filesystem::remove_all(sysfs_);
    std::filesystem::create_directories(sysfs_);
    fakes::NvidiaHgxNode(sysfs_);
    auto nvml = NvmlAccelerator::Open({.library_path = GPUOP_FAKE_NVML_LIBRARY,
                                       .sysfs_root = sysfs_.string(),
                                       .reset_gpus = std::move(reset)});
    ASSERT_TRUE(nvml.ok()) << nvml.status();
    nvml_ = *std::move(nvml);
  }

  void Control(const std::string& line) { std::ofstream(control_, std::ios::app) << line << "\n"; }

  Inventory Discover() {
    auto inventory = nvml_->Discover();
    EXPECT_TRUE(inventory.ok()) << inventory.status();
    return inventory.ok() ? *inventory : Inventory{};
  }

  // The first batch of events within 10 s; empty when none came (or waiting failed, which fails
  // the test).
  std::vector<HardwareEvent> NextEvents() {
    for (int i = 0; i < 100; ++i) {
      absl::StatusOr<std::vector<HardwareEvent>> got = nvml_->WaitEvents(absl::Milliseconds(100));
      EXPECT_TRUE(got.ok()) << got.status();
      if (!got.ok()) return {};
      if (!got->empty()) return *got;
    }
    return {};
  }

  std::unique_ptr<NvmlAccelerator> nvml_;
  std::filesystem::path control_;
  std::filesystem::path sysfs_;
};

}  // namespace gpuop::hw

#endif  // GPUOP_HW_NVML_NVML_ACCELERATOR_TEST_UTIL_H_
