// The checks against the fake NVML and fake CUDA libraries (real dlopen).
#include "agent/validate/checks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include "hw/nvml/nvml_accelerator.h"

namespace gpuop::agent {
namespace {

using ::testing::HasSubstr;

class ChecksTest : public ::testing::Test {
 protected:
  void TearDown() override {
    nvml_.reset();
    unsetenv("GPUOP_FAKE_NVML_SCENARIO");
    unsetenv("GPUOP_FAKE_CUDA_FAULT");
  }
  std::vector<hw::Accelerator*> Open(const char* scenario) {
    setenv("GPUOP_FAKE_NVML_SCENARIO", scenario, 1);
    auto nvml = hw::NvmlAccelerator::Open({.library_path = GPUOP_FAKE_NVML_LIBRARY});
    EXPECT_TRUE(nvml.ok()) << nvml.status();
    if (!nvml.ok()) return {};
    nvml_ = *std::move(nvml);
    return {nvml_.get()};
  }
  std::unique_ptr<hw::NvmlAccelerator> nvml_;
};

TEST_F(ChecksTest, DriverCheckReportsVersionAndGpus) {
  auto result = DriverCheck(Open("h100-8x-nvswitch")).run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(*result, HasSubstr("nvidia driver "));
  EXPECT_THAT(*result, HasSubstr(", 8 GPUs"));
}

TEST_F(ChecksTest, DriverCheckFailsWithoutGpusOrDriver) {
  auto none = DriverCheck({}).run();
  EXPECT_THAT(none.status().message(), HasSubstr("no GPU driver answers"));
  auto empty = DriverCheck(Open("no-gpus")).run();
  EXPECT_THAT(empty.status().message(), HasSubstr("the driver sees no GPU"));
}

TEST_F(ChecksTest, CudaRunsOnEveryGpuAndNamesTheOneThatFails) {
  auto accelerators = Open("l4-4x-pcie");
  hw::Inventory inventory = *nvml_->Discover();
  std::string devices;
  for (const auto& gpu : inventory.gpus) devices += gpu.pci_bus_id + ",";
  // The fake CUDA library reads its device list once; this test owns the process's first load.
  setenv("GPUOP_FAKE_CUDA_DEVICES", devices.c_str(), 1);
  const hw::CudaValidationOptions options{.library_path = GPUOP_FAKE_CUDA_LIBRARY,
                                          .elements = 4096};
  auto result = CudaCheck(accelerators, options).run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(*result, HasSubstr("vector add on 4 GPUs"));

  setenv("GPUOP_FAKE_CUDA_FAULT", "wrong-result", 1);
  auto bad = CudaCheck(accelerators, options).run();
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(bad.status().message(), HasSubstr("GPU 0 ("));
}

TEST_F(ChecksTest, CudaIsNotApplicableWithoutNvidiaGpus) {
  auto result = CudaCheck({}, {}).run();
  ASSERT_TRUE(result.ok());
  EXPECT_THAT(*result, HasSubstr("not applicable"));
}

TEST_F(ChecksTest, DevicePluginCheckComparesAllocatableWithTheGpusFound) {
  auto accelerators = Open("h100-8x-nvswitch");
  std::map<std::string, std::string> allocatable = {{"cpu", "96"}, {"nvidia.com/gpu", "8"}};
  auto reader = [&]() -> absl::StatusOr<std::map<std::string, std::string>> { return allocatable; };
  auto ok = DevicePluginCheck(accelerators, reader).run();
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(*ok, "allocatable nvidia.com/gpu=8");

  allocatable["nvidia.com/gpu"] = "7";  // one GPU unhealthy
  auto short_by_one = DevicePluginCheck(accelerators, reader).run();
  EXPECT_THAT(short_by_one.status().message(),
              HasSubstr("allocatable has nvidia.com/gpu=7 but the GPUs found yield 8 devices"));

  allocatable.erase("nvidia.com/gpu");
  auto missing = DevicePluginCheck(accelerators, reader).run();
  EXPECT_THAT(missing.status().message(), HasSubstr("has no nvidia.com/ resource"));

  allocatable["nvidia.com/gpu"] = "8k";
  auto garbled = DevicePluginCheck(accelerators, reader).run();
  EXPECT_THAT(garbled.status().message(),
              HasSubstr("allocatable nvidia.com/gpu=\"8k\" is not a device count"));
}

TEST_F(ChecksTest, DevicePluginCheckCountsMigInstances) {
  auto accelerators = Open("a100-8x-mig");
  hw::Inventory inventory = *nvml_->Discover();
  int devices = 0;
  for (const auto& gpu : inventory.gpus) {
    devices += gpu.mig_enabled ? static_cast<int>(gpu.mig_devices.size()) : 1;
  }
  // Mixed strategy: whole GPUs and MIG resources side by side.
  std::map<std::string, std::string> allocatable = {
      {"nvidia.com/gpu", "4"}, {"nvidia.com/mig-1g.10gb", std::to_string(devices - 4)}};
  auto result =
      DevicePluginCheck(accelerators, [&]() -> absl::StatusOr<std::map<std::string, std::string>> {
        return allocatable;
      }).run();
  EXPECT_TRUE(result.ok()) << result.status();
  allocatable["nvidia.com/mig-1g.10gb"] = std::to_string(devices - 5);
  result =
      DevicePluginCheck(accelerators, [&]() -> absl::StatusOr<std::map<std::string, std::string>> {
        return allocatable;
      }).run();
  EXPECT_FALSE(result.ok());
}

}  // namespace
}  // namespace gpuop::agent
