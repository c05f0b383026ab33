// The accelerator layer on the machine's real NVIDIA driver. Every test skips on machines
// without the driver library or without a loaded driver, so the `gpu` label is safe anywhere.
#include <gtest/gtest.h>

#include "hw/cuda/cuda_validator.h"
#include "hw/nvml/nvml_accelerator.h"

namespace gpuop::hw {
namespace {

class RealGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto nvml = NvmlAccelerator::Open();
    if (nvml.status().code() == absl::StatusCode::kNotFound) {
      GTEST_SKIP() << "no NVIDIA driver library: " << nvml.status();
    }
    if (nvml.status().code() == absl::StatusCode::kFailedPrecondition) {
      GTEST_SKIP() << "NVIDIA driver not usable: " << nvml.status();
    }
    ASSERT_TRUE(nvml.ok()) << nvml.status();
    nvml_ = *std::move(nvml);
  }

  std::unique_ptr<NvmlAccelerator> nvml_;
};

TEST_F(RealGpuTest, InventoryDescribesEveryGpu) {
  auto inventory = nvml_->Discover();
  ASSERT_TRUE(inventory.ok()) << inventory.status();
  ASSERT_FALSE(inventory->gpus.empty());
  EXPECT_FALSE(inventory->driver_version.empty());
  EXPECT_GT(inventory->cuda_driver_version, 0);
  for (const Gpu& gpu : inventory->gpus) {
    EXPECT_EQ(gpu.uuid.rfind("GPU-", 0), 0u) << gpu.uuid;
    EXPECT_EQ(gpu.pci_bus_id.size(), 12u) << gpu.pci_bus_id;
    EXPECT_GT(gpu.memory_bytes, 0u);
    EXPECT_GT(gpu.compute_major, 0);
    EXPECT_FALSE(gpu.architecture.empty()) << gpu.compute_major << "." << gpu.compute_minor;
    EXPECT_EQ(gpu.links.size(), inventory->gpus.size() - 1);
  }
}

TEST_F(RealGpuTest, SampleReportsCoreTelemetry) {
  auto sample = nvml_->TakeSample();
  ASSERT_TRUE(sample.ok()) << sample.status();
  ASSERT_FALSE(sample->gpus.empty());
  for (const GpuSample& g : sample->gpus) {
    EXPECT_FALSE(g.lost);
    EXPECT_TRUE(g.gpu_utilization_percent.has_value());
    EXPECT_TRUE(g.memory_used_bytes.has_value());
    EXPECT_TRUE(g.temperature_celsius.has_value());
    EXPECT_TRUE(g.power_watts.has_value());
  }
}

TEST_F(RealGpuTest, EventWaitTimesOutQuietlyOnAHealthyGpu) {
  auto events = nvml_->WaitEvents(absl::Milliseconds(500));
  ASSERT_TRUE(events.ok()) << events.status();
  for (const auto& e : events.value()) ADD_FAILURE() << "unexpected event: xid " << e.xid;
}

TEST_F(RealGpuTest, CudaVectorAddRuns) {
  auto result = ValidateCuda({.elements = 1 << 22});
  if (result.status().code() == absl::StatusCode::kNotFound) GTEST_SKIP() << result.status();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->device_name.empty());
}

}  // namespace
}  // namespace gpuop::hw
