#ifndef GPUOP_AGENT_POWER_POWER_TEST_UTIL_H_
#define GPUOP_AGENT_POWER_POWER_TEST_UTIL_H_

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include "hw/nvml/nvml_accelerator.h"

namespace gpuop::agent::power::testing {

// A machine played by the fake NVML library from a preset, with its scenario clock frozen
// (only "advance" control lines move it) and a control file for utilization, processes and
// time. One machine is open at a time.
class FakeMachine {
 public:
  explicit FakeMachine(const char* preset) {
    static std::atomic<int> counter{0};
    control_ = std::filesystem::temp_directory_path() /
               ("gpuop-power-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
    std::ofstream(control_, std::ios::trunc).flush();
    setenv("GPUOP_FAKE_NVML_SCENARIO", preset, 1);
    setenv("GPUOP_FAKE_NVML_CONTROL", control_.c_str(), 1);
    setenv("GPUOP_FAKE_NVML_TIME_SCALE", "0", 1);
    auto nvml = hw::NvmlAccelerator::Open({.library_path = GPUOP_FAKE_NVML_LIBRARY});
    EXPECT_TRUE(nvml.ok()) << nvml.status();
    if (nvml.ok()) nvml_ = *std::move(nvml);
  }
  ~FakeMachine() {
    nvml_.reset();
    unsetenv("GPUOP_FAKE_NVML_SCENARIO");
    unsetenv("GPUOP_FAKE_NVML_CONTROL");
    unsetenv("GPUOP_FAKE_NVML_TIME_SCALE");
    std::error_code ignored;
    std::filesystem::remove(control_, ignored);
  }

  bool ok() const { return nvml_ != nullptr; }
  hw::NvmlAccelerator& nvml() { return *nvml_; }
  void Control(const std::string& line) { std::ofstream(control_, std::ios::app) << line << "\n"; }
  // The GPU's current power limit as NVML reports it.
  double Limit(int gpu) {
    auto sample = nvml_->TakeSample();
    EXPECT_TRUE(sample.ok()) << sample.status();
    return sample.ok() ? sample->gpus.at(static_cast<size_t>(gpu)).power_limit_watts.value_or(-1)
                       : -1;
  }
  std::string Uuid(int gpu) {
    auto inventory = nvml_->Discover();
    EXPECT_TRUE(inventory.ok()) << inventory.status();
    return inventory.ok() ? inventory->gpus.at(static_cast<size_t>(gpu)).uuid : "";
  }

 private:
  std::filesystem::path control_;
  std::unique_ptr<hw::NvmlAccelerator> nvml_;
};

}  // namespace gpuop::agent::power::testing

#endif  // GPUOP_AGENT_POWER_POWER_TEST_UTIL_H_
