// The accelerator layer on the machine's real NVIDIA driver. Every test skips on machines
// without the driver library or without a loaded driver, so the `gpu` label is safe anywhere.
#include <cstdio>

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

// nvml.h tells the management limit (the one set) from the enforced one; the power manager works
// from the first. Both are read, the enforced one never above it, and a limit set within the
// constraints reads back and is given back (needs root, as nvmlDeviceSetPowerManagementLimit).
TEST_F(RealGpuTest, PowerLimitsReadApartAndALimitSetIsGivenBack) {
  auto sample = nvml_->TakeSample();
  ASSERT_TRUE(sample.ok()) << sample.status();
  const GpuSample& g = sample->gpus.front();
  if (!g.power_limit_watts.has_value()) GTEST_SKIP() << "GPU 0 has no power management";
  ASSERT_TRUE(g.enforced_power_limit_watts.has_value());
  ASSERT_TRUE(g.power_limit_min_watts.has_value() && g.power_limit_max_watts.has_value());
  std::printf("GPU 0 power: management %.1f W, enforced %.1f W, default %.1f W, [%.1f, %.1f] W\n",
              *g.power_limit_watts, *g.enforced_power_limit_watts,
              g.power_limit_default_watts.value_or(-1), *g.power_limit_min_watts,
              *g.power_limit_max_watts);
  EXPECT_LE(*g.enforced_power_limit_watts, *g.power_limit_watts + 0.5);
  const double original = *g.power_limit_watts;
  const absl::Status lowered = nvml_->SetPowerLimit(0, *g.power_limit_min_watts);
  if (absl::IsPermissionDenied(lowered)) GTEST_SKIP() << lowered;
  ASSERT_TRUE(lowered.ok()) << lowered;
  auto after = nvml_->TakeSample();
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_NEAR(after->gpus.front().power_limit_watts.value_or(-1), *g.power_limit_min_watts, 0.5);
  ASSERT_TRUE(nvml_->SetPowerLimit(0, original).ok());
  after = nvml_->TakeSample();
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_NEAR(after->gpus.front().power_limit_watts.value_or(-1), original, 0.5);
}

// MIG as a privileged process sees it: the profiles of a MIG-capable GPU, and, where MIG is on,
// devices whose profiles could be read (no mig_unreadable: this process holds the monitor
// capability). Printed for the issue note.
TEST_F(RealGpuTest, MigProfilesAndDevicesAreReadable) {
  auto inventory = nvml_->Discover();
  ASSERT_TRUE(inventory.ok()) << inventory.status();
  bool capable = false;
  for (const Gpu& gpu : inventory->gpus) {
    if (!gpu.mig_capable) continue;
    capable = true;
    std::printf("GPU %d %s: MIG %s%s, %zu profiles, %zu MIG devices\n", gpu.index,
                gpu.product.c_str(), gpu.mig_enabled ? "on" : "off",
                gpu.mig_pending_change ? " (change pending)" : "", gpu.mig_profiles.size(),
                gpu.mig_devices.size());
    EXPECT_FALSE(gpu.mig_profiles.empty());
    for (const MigProfile& p : gpu.mig_profiles) std::printf("  profile %s\n", p.name.c_str());
    EXPECT_EQ(gpu.mig_unreadable, "");
    for (const MigDevice& m : gpu.mig_devices) EXPECT_FALSE(m.profile.empty()) << m.uuid;
  }
  if (!capable) GTEST_SKIP() << "no MIG-capable GPU";
}

// GPM on Hopper and newer: ratios and PCIe rates in range from the second sample; absent before
// Hopper. The NVLink traffic counter, where the driver reports one. Printed for the issue note.
TEST_F(RealGpuTest, GpmActivityAndNvlinkTrafficAreRead) {
  auto inventory = nvml_->Discover();
  ASSERT_TRUE(inventory.ok()) << inventory.status();
  ASSERT_TRUE(nvml_->TakeSample().ok());
  absl::SleepFor(absl::Seconds(1));
  auto sample = nvml_->TakeSample();
  ASSERT_TRUE(sample.ok()) << sample.status();
  for (const GpuSample& g : sample->gpus) {
    const Gpu& gpu = inventory->gpus.at(static_cast<size_t>(g.index));
    std::printf(
        "GPU %d (%s): GPM %s: graphics %.3f sm %.3f tensor %.3f dram %.3f pcie tx %.0f "
        "rx %.0f B/s; nvlink %s\n",
        g.index, gpu.architecture.c_str(), g.activity.sm_active.has_value() ? "yes" : "no",
        g.activity.graphics_active.value_or(-1), g.activity.sm_active.value_or(-1),
        g.activity.tensor_active.value_or(-1), g.activity.dram_active.value_or(-1),
        g.activity.pcie_tx_bytes_per_second.value_or(-1),
        g.activity.pcie_rx_bytes_per_second.value_or(-1),
        g.nvlink_bytes_total.has_value() ? std::to_string(*g.nvlink_bytes_total).c_str()
                                         : "absent");
    const bool hopper_or_newer = gpu.compute_major >= 9;
    EXPECT_EQ(g.activity.sm_active.has_value(), hopper_or_newer) << g.index;
    for (const auto& ratio : {g.activity.graphics_active, g.activity.sm_active,
                              g.activity.tensor_active, g.activity.dram_active}) {
      if (ratio.has_value()) {
        EXPECT_TRUE(*ratio >= 0 && *ratio <= 1) << g.index;
      }
    }
    // NVLink traffic is printed, not checked: whether a lone GPU has NVLink (to NVSwitches) is
    // not something the inventory tells.
  }
}

TEST_F(RealGpuTest, CudaVectorAddRuns) {
  auto result = ValidateCuda({.elements = 1 << 22});
  if (result.status().code() == absl::StatusCode::kNotFound) GTEST_SKIP() << result.status();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->device_name.empty());
}

}  // namespace
}  // namespace gpuop::hw
