#ifndef GPUOP_TEST_FAKES_NVML_FAKE_MACHINE_H_
#define GPUOP_TEST_FAKES_NVML_FAKE_MACHINE_H_

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include "absl/status/status.h"
#include "hw/nvml/nvml_abi.h"
#include "hw/nvml/nvml_accelerator.h"

// For tests: the including target defines GPUOP_FAKE_NVML_LIBRARY (the fake's path).
namespace gpuop::fakes {

// A machine played by the fake NVML library (test/fakes/nvml) from a preset, opened through
// the real NVML backend, with a control file for injecting utilization, processes, faults and
// time, and a node state file that keeps the MIG state across NVML sessions as the kernel driver
// does. GPU resets go through the fake's reset (what the simulated nvidia-smi -r calls), in a
// session of their own. The fake reads its environment at the first init, so one machine is
// open at a time; closing it discards every change.
class FakeMachine {
 public:
  // `frozen_time`: the scenario clock moves only with "advance" control lines.
  explicit FakeMachine(const char* preset, bool frozen_time = false) {
    static std::atomic<int> counter{0};
    dir_ = std::filesystem::temp_directory_path() /
           ("gpuop-fake-machine-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(dir_);
    control_ = dir_ / "nvml-control";
    std::ofstream(control_, std::ios::trunc).flush();
    setenv("GPUOP_FAKE_NVML_SCENARIO", preset, 1);
    setenv("GPUOP_FAKE_NVML_CONTROL", control_.c_str(), 1);
    setenv("GPUOP_FAKE_NVML_STATE", (dir_ / "nvml-state").c_str(), 1);
    if (frozen_time) setenv("GPUOP_FAKE_NVML_TIME_SCALE", "0", 1);
    auto nvml = hw::NvmlAccelerator::Open(
        {.library_path = GPUOP_FAKE_NVML_LIBRARY, .reset_gpus = &FakeMachine::Reset});
    EXPECT_TRUE(nvml.ok()) << nvml.status();
    if (nvml.ok()) nvml_ = *std::move(nvml);
  }
  ~FakeMachine() {
    nvml_.reset();
    unsetenv("GPUOP_FAKE_NVML_SCENARIO");
    unsetenv("GPUOP_FAKE_NVML_CONTROL");
    unsetenv("GPUOP_FAKE_NVML_STATE");
    unsetenv("GPUOP_FAKE_NVML_TIME_SCALE");
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  FakeMachine(const FakeMachine&) = delete;
  FakeMachine& operator=(const FakeMachine&) = delete;

  bool ok() const { return nvml_ != nullptr; }
  hw::NvmlAccelerator& nvml() { return *nvml_; }
  const std::filesystem::path& dir() const { return dir_; }
  // Appends a control line ("process 2 4242 1024", "xid 3 79", "advance 60").
  void Control(const std::string& line) { std::ofstream(control_, std::ios::app) << line << "\n"; }
  hw::Inventory Discover() {
    auto inventory = nvml_->Discover();
    EXPECT_TRUE(inventory.ok()) << inventory.status();
    return inventory.ok() ? *inventory : hw::Inventory{};
  }
  std::string Uuid(int gpu) {
    const hw::Inventory inventory = Discover();
    return static_cast<size_t>(gpu) < inventory.gpus.size()
               ? inventory.gpus[static_cast<size_t>(gpu)].uuid
               : "";
  }
  // The GPU's current power limit as NVML reports it; -1 when unknown.
  double Limit(int gpu) {
    auto sample = nvml_->TakeSample();
    EXPECT_TRUE(sample.ok()) << sample.status();
    return sample.ok() ? sample->gpus.at(static_cast<size_t>(gpu)).power_limit_watts.value_or(-1)
                       : -1;
  }

 private:
  // What `nvidia-smi -r -i <ids>` does against the fake: a session of its own (the backend has
  // shut its own down), each GPU by bus id through gpuop_fake_nvml_reset_gpu.
  static absl::Status Reset(const std::vector<std::string>& pci_bus_ids) {
    void* lib = dlopen(GPUOP_FAKE_NVML_LIBRARY, RTLD_NOW | RTLD_NOLOAD);
    if (lib == nullptr) return absl::InternalError("the fake NVML is not loaded");
    using Init = int (*)();
    using ByBusId = int (*)(const char*, void**);
    using ResetGpu = int (*)(void*);
    auto init = reinterpret_cast<Init>(dlsym(lib, "nvmlInit_v2"));
    auto shutdown = reinterpret_cast<Init>(dlsym(lib, "nvmlShutdown"));
    auto by_bus = reinterpret_cast<ByBusId>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    auto reset = reinterpret_cast<ResetGpu>(dlsym(lib, "gpuop_fake_nvml_reset_gpu"));
    absl::Status status;
    if (init == nullptr || shutdown == nullptr || by_bus == nullptr || reset == nullptr ||
        init() != 0) {
      status = absl::InternalError("the fake NVML cannot reset");
    } else {
      for (const std::string& id : pci_bus_ids) {
        void* device = nullptr;
        const int found = by_bus(id.c_str(), &device);
        const int rc = found == 0 ? reset(device) : found;
        if (rc != 0) {
          status.Update(absl::FailedPreconditionError(
              "nvidia-smi -r -i " + id + ": " +
              (rc == NVML_ERROR_IN_USE ? std::string("the GPU is in use by another process")
                                       : "NVML error " + std::to_string(rc))));
        }
      }
      shutdown();
    }
    dlclose(lib);
    return status;
  }

  std::filesystem::path dir_;
  std::filesystem::path control_;
  std::unique_ptr<hw::NvmlAccelerator> nvml_;
};

}  // namespace gpuop::fakes

#endif  // GPUOP_TEST_FAKES_NVML_FAKE_MACHINE_H_
