#include <cmath>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/fake_clock.h"
#include "hw/amd/amd_accelerator.h"
#include "test/fakes/sysfs/fake_sysfs.h"
#include "test/fakes/sysfs/presets.h"

namespace gpuop::hw {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

constexpr uint64_t kGiB = uint64_t{1} << 30;

class AmdTelemetryTest : public ::testing::Test {
 protected:
  AmdAccelerator Accelerator() {
    return AmdAccelerator({.sysfs_root = dir_.string(), .clock = &clock_});
  }
  Sample TakeSample(AmdAccelerator& amd) {
    absl::StatusOr<Sample> sample = amd.TakeSample();
    EXPECT_TRUE(sample.ok()) << sample.status();
    return sample.ok() ? *std::move(sample) : Sample{};
  }

  fakes::TempDir dir_;
  common::FakeClock clock_;
};

TEST_F(AmdTelemetryTest, Mi300xSampleInSiUnits) {
  fakes::FakeSysfs sysfs = fakes::Mi300xNode(dir_.path());
  AmdAccelerator amd = Accelerator();  // TakeSample discovers on first use
  Sample sample = TakeSample(amd);
  EXPECT_EQ(sample.time, clock_.Now());
  ASSERT_THAT(sample.gpus, SizeIs(8));
  const GpuSample& s = sample.gpus[3];
  EXPECT_EQ(s.index, 3);
  EXPECT_FALSE(s.lost);
  EXPECT_EQ(s.gpu_utilization_percent, 30u);
  EXPECT_EQ(s.memory_utilization_percent, 15u);
  EXPECT_EQ(s.memory_used_bytes, 4 * kGiB);
  EXPECT_EQ(s.memory_free_bytes, 188 * kGiB);
  // No edge sensor on MI300X: the temperature is the junction's, and there are no limits.
  EXPECT_EQ(s.temperature_celsius, 45);
  EXPECT_EQ(s.memory_temperature_celsius, 39);
  EXPECT_FALSE(s.slowdown_temperature_celsius.has_value());
  EXPECT_FALSE(s.shutdown_temperature_celsius.has_value());
  EXPECT_DOUBLE_EQ(s.power_watts.value_or(0), 143.0);  // power1_input
  EXPECT_DOUBLE_EQ(s.power_limit_watts.value_or(0), 750.0);
  EXPECT_DOUBLE_EQ(s.power_limit_min_watts.value_or(-1), 0.0);
  EXPECT_DOUBLE_EQ(s.power_limit_max_watts.value_or(0), 750.0);
  EXPECT_DOUBLE_EQ(s.power_limit_default_watts.value_or(0), 750.0);
  EXPECT_FALSE(s.energy_joules.has_value());
  EXPECT_EQ(s.sm_clock_mhz, 132u);
  EXPECT_EQ(s.memory_clock_mhz, 900u);
  EXPECT_EQ(s.ecc_volatile_corrected, 0u);
  EXPECT_EQ(s.ecc_volatile_uncorrected, 0u);
  EXPECT_EQ(s.pcie_replay_count, 0u);
  EXPECT_FALSE(s.encoder_utilization_percent.has_value());
  EXPECT_FALSE(s.throttle_reasons.has_value());
}

TEST_F(AmdTelemetryTest, Mi210SampleHasEdgeSensorAndLimits) {
  fakes::FakeSysfs sysfs = fakes::Mi210Node(dir_.path());
  AmdAccelerator amd = Accelerator();
  ASSERT_TRUE(amd.Discover().ok());
  Sample sample = TakeSample(amd);
  ASSERT_THAT(sample.gpus, SizeIs(2));
  const GpuSample& s = sample.gpus[1];
  EXPECT_EQ(s.gpu_utilization_percent, 75u);
  EXPECT_EQ(s.memory_used_bytes, 11927552 + kGiB);
  EXPECT_EQ(s.memory_free_bytes, 68702699520 - 11927552 - kGiB);
  EXPECT_EQ(s.temperature_celsius, 37);
  EXPECT_EQ(s.slowdown_temperature_celsius, 100);
  EXPECT_EQ(s.shutdown_temperature_celsius, 105);
  EXPECT_EQ(s.memory_temperature_celsius, 36);
  EXPECT_DOUBLE_EQ(s.power_watts.value_or(0), 42.5);  // power1_average
  EXPECT_DOUBLE_EQ(s.power_limit_watts.value_or(0), 300.0);
  EXPECT_EQ(s.sm_clock_mhz, 800u);
  EXPECT_EQ(s.memory_clock_mhz, 1600u);
  EXPECT_EQ(s.ecc_volatile_corrected, 2u);
  EXPECT_EQ(s.pcie_replay_count, 1u);
}

TEST_F(AmdTelemetryTest, UnitConversionsRoundAndScale) {
  fakes::FakeSysfs sysfs = fakes::Mi210Node(dir_.path());
  const std::string hwmon = sysfs.HwmonPath("0000:43:00.0");
  sysfs.WriteFile(hwmon + "/temp1_input", "45500\n");  // millidegrees
  sysfs.WriteFile(hwmon + "/temp3_input", "44499\n");
  sysfs.WriteFile(hwmon + "/power1_average", "123456\n");    // microwatts
  sysfs.WriteFile(hwmon + "/energy1_input", "987654321\n");  // microjoules
  sysfs.WriteFile(hwmon + "/freq1_input", "1699999999\n");   // hertz
  AmdAccelerator amd = Accelerator();
  const GpuSample s = TakeSample(amd).gpus.at(0);
  EXPECT_EQ(s.temperature_celsius, 46);
  EXPECT_EQ(s.memory_temperature_celsius, 44);
  EXPECT_DOUBLE_EQ(s.power_watts.value_or(0), 0.123456);
  EXPECT_DOUBLE_EQ(s.energy_joules.value_or(0), 987.654321);
  EXPECT_EQ(s.sm_clock_mhz, 1699u);
}

TEST_F(AmdTelemetryTest, UnreadableSensorsStayEmpty) {
  fakes::FakeSysfs sysfs = fakes::Mi210Node(dir_.path());
  const std::string dev = sysfs.DevicePath("0000:43:00.0");
  sysfs.WriteFile(dev + "/gpu_busy_percent", "busy\n");
  sysfs.Remove(dev + "/mem_info_vram_used");
  sysfs.Remove(sysfs.HwmonPath("0000:43:00.0"));
  AmdAccelerator amd = Accelerator();
  const GpuSample s = TakeSample(amd).gpus.at(0);
  EXPECT_FALSE(s.lost);
  EXPECT_FALSE(s.gpu_utilization_percent.has_value());
  EXPECT_EQ(s.memory_utilization_percent, 3u);
  EXPECT_FALSE(s.memory_used_bytes.has_value());
  EXPECT_FALSE(s.memory_free_bytes.has_value());
  EXPECT_FALSE(s.temperature_celsius.has_value());
  EXPECT_FALSE(s.power_watts.has_value());
}

TEST_F(AmdTelemetryTest, GpuThatDisappearsIsReportedLost) {
  fakes::FakeSysfs sysfs = fakes::Mi300xNode(dir_.path());
  AmdAccelerator amd = Accelerator();
  ASSERT_TRUE(amd.Discover().ok());
  sysfs.RemovePciDevice("0000:46:00.0");  // GPU 2
  Sample sample = TakeSample(amd);
  ASSERT_THAT(sample.gpus, SizeIs(8));
  EXPECT_TRUE(sample.gpus[2].lost);
  EXPECT_EQ(sample.gpus[2].index, 2);
  EXPECT_FALSE(sample.gpus[2].temperature_celsius.has_value());
  EXPECT_FALSE(sample.gpus[2].power_watts.has_value());
  EXPECT_FALSE(sample.gpus[3].lost);
  EXPECT_EQ(sample.gpus[3].temperature_celsius, 45);
  // Control calls on it say so.
  absl::Status status = amd.SetPowerLimit(2, 500);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("GPU 2, 0000:46:00.0"));
  // A new Discover no longer lists it; the indexes close up.
  absl::StatusOr<Inventory> inventory = amd.Discover();
  ASSERT_TRUE(inventory.ok());
  EXPECT_THAT(inventory->gpus, SizeIs(7));
  EXPECT_THAT(TakeSample(amd).gpus, SizeIs(7));
}

TEST_F(AmdTelemetryTest, SetPowerLimitWritesMicrowatts) {
  fakes::FakeSysfs sysfs = fakes::Mi300xNode(dir_.path());
  AmdAccelerator amd = Accelerator();
  ASSERT_TRUE(amd.SetPowerLimit(1, 500).ok());
  const std::string cap = sysfs.HwmonPath("0000:26:00.0") + "/power1_cap";
  EXPECT_EQ(sysfs.ReadFile(cap), "500000000\n");
  EXPECT_DOUBLE_EQ(TakeSample(amd).gpus.at(1).power_limit_watts.value_or(0), 500.0);
  // amdgpu keeps whole watts.
  ASSERT_TRUE(amd.SetPowerLimit(1, 612.6).ok());
  EXPECT_EQ(sysfs.ReadFile(cap), "613000000\n");
  ASSERT_TRUE(amd.SetPowerLimit(1, 750).ok());  // the maximum itself
  EXPECT_EQ(sysfs.ReadFile(cap), "750000000\n");
  EXPECT_EQ(sysfs.ReadFile(sysfs.HwmonPath("0000:05:00.0") + "/power1_cap"), "750000000\n");
}

TEST_F(AmdTelemetryTest, SetPowerLimitRejectsValuesOutsideTheCapRange) {
  fakes::FakeSysfs sysfs = fakes::Mi300xNode(dir_.path());
  const std::string hwmon = sysfs.HwmonPath("0000:05:00.0");
  sysfs.WriteFile(hwmon + "/power1_cap_min", "200000000\n");
  AmdAccelerator amd = Accelerator();
  absl::Status high = amd.SetPowerLimit(0, 800);
  EXPECT_EQ(high.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(high.message(), HasSubstr("SetPowerLimit(GPU 0, 0000:05:00.0)"));
  EXPECT_THAT(high.message(),
              HasSubstr("800 W is outside the GPU's power cap range [200 W, 750 W]"));
  absl::Status low = amd.SetPowerLimit(0, 150);
  EXPECT_EQ(low.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(low.message(), HasSubstr("150 W"));
  EXPECT_EQ(sysfs.ReadFile(hwmon + "/power1_cap"), "750000000\n");  // untouched
  for (double nonsense : {0.0, -5.0, 0.4, std::nan(""), 1e12}) {
    EXPECT_EQ(amd.SetPowerLimit(0, nonsense).code(), absl::StatusCode::kInvalidArgument)
        << nonsense;
  }
  absl::Status missing = amd.SetPowerLimit(8, 500);
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.message(), HasSubstr("no such AMD GPU; the node has 8"));
}

TEST_F(AmdTelemetryTest, SetPowerLimitWithoutPowerCapIsUnimplemented) {
  fakes::FakeSysfs sysfs = fakes::Mi210Node(dir_.path());
  sysfs.Remove(sysfs.HwmonPath("0000:43:00.0") + "/power1_cap");
  AmdAccelerator amd = Accelerator();
  absl::Status status = amd.SetPowerLimit(0, 250);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(status.message(), HasSubstr("power1_cap"));
  EXPECT_TRUE(amd.SetPowerLimit(1, 250).ok());
}

TEST_F(AmdTelemetryTest, SetPowerLimitPassesOnAFailedWrite) {
  fakes::FakeSysfs sysfs = fakes::Mi210Node(dir_.path());
  const std::string cap = sysfs.HwmonPath("0000:43:00.0") + "/power1_cap";
  sysfs.Remove(cap);
  sysfs.WriteFile(cap + "/not-an-attribute", "");  // a directory: open for writing fails
  AmdAccelerator amd = Accelerator();
  absl::Status status = amd.SetPowerLimit(0, 250);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("SetPowerLimit(GPU 0, 0000:43:00.0)"));
  EXPECT_THAT(status.message(), HasSubstr("hwmon1/power1_cap"));
}

}  // namespace
}  // namespace gpuop::hw
