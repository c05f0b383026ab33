#ifndef GPUOP_AGENT_MIG_MIG_TEST_UTIL_H_
#define GPUOP_AGENT_MIG_MIG_TEST_UTIL_H_

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include "hw/nvml/nvml_accelerator.h"

namespace gpuop::agent::mig::testing {

// A machine played by the fake NVML library (test/fakes/nvml) from a preset, with a control
// file for injecting processes and faults. The fake reads its environment at the first init, so
// one machine is open at a time; closing it discards every change.
class FakeMachine {
 public:
  explicit FakeMachine(const char* preset) {
    static std::atomic<int> counter{0};
    dir_ = std::filesystem::temp_directory_path() /
           ("gpuop-mig-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(dir_);
    control_ = dir_ / "nvml-control";
    std::ofstream(control_, std::ios::trunc).flush();
    setenv("GPUOP_FAKE_NVML_SCENARIO", preset, 1);
    setenv("GPUOP_FAKE_NVML_CONTROL", control_.c_str(), 1);
    auto nvml = hw::NvmlAccelerator::Open({.library_path = GPUOP_FAKE_NVML_LIBRARY});
    EXPECT_TRUE(nvml.ok()) << nvml.status();
    if (nvml.ok()) nvml_ = *std::move(nvml);
  }
  ~FakeMachine() {
    nvml_.reset();
    unsetenv("GPUOP_FAKE_NVML_SCENARIO");
    unsetenv("GPUOP_FAKE_NVML_CONTROL");
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  bool ok() const { return nvml_ != nullptr; }
  hw::NvmlAccelerator& nvml() { return *nvml_; }
  const std::filesystem::path& dir() const { return dir_; }
  // Appends a control line ("process 2 4242 1024").
  void Control(const std::string& line) { std::ofstream(control_, std::ios::app) << line << "\n"; }
  hw::Inventory Discover() {
    auto inventory = nvml_->Discover();
    EXPECT_TRUE(inventory.ok()) << inventory.status();
    return inventory.ok() ? *inventory : hw::Inventory{};
  }

 private:
  std::filesystem::path dir_;
  std::filesystem::path control_;
  std::unique_ptr<hw::NvmlAccelerator> nvml_;
};

}  // namespace gpuop::agent::mig::testing

#endif  // GPUOP_AGENT_MIG_MIG_TEST_UTIL_H_
