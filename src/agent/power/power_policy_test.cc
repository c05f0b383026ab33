#include "agent/power/power_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuop::agent::power {
namespace {

using ::testing::HasSubstr;

TEST(PowerPolicyTest, ParsesEveryField) {
  auto policy = ParsePowerPolicy(
      "enabled: true\nidleMinutes: 15\nfloorFraction: 0.4\nutilizationThresholdPercent: 3\n",
      "policy.yaml");
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_TRUE(policy->enabled);
  EXPECT_EQ(policy->idle_for, absl::Minutes(15));
  EXPECT_EQ(policy->floor_fraction, 0.4);
  EXPECT_FALSE(policy->floor_watts.has_value());
  EXPECT_EQ(policy->utilization_threshold_percent, 3u);

  auto empty = ParsePowerPolicy("", "policy.yaml");
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->enabled);
}

struct Bad {
  const char* name;
  const char* yaml;
  const char* message;
};

class PowerPolicyErrorTest : public ::testing::TestWithParam<Bad> {};

TEST_P(PowerPolicyErrorTest, NamesTheField) {
  auto policy = ParsePowerPolicy(GetParam().yaml, "policy.yaml");
  ASSERT_FALSE(policy.ok());
  EXPECT_EQ(policy.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(policy.status().message()),
              HasSubstr(std::string("power policy policy.yaml: ") + GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Errors, PowerPolicyErrorTest,
    ::testing::Values(
        Bad{"Unknown", "enable: true", "enable: unknown field"},
        Bad{"NotBool", "enabled: yes please", "enabled: must be true or false"},
        Bad{"IdleZero", "idleMinutes: 0", "idleMinutes: must be positive"},
        Bad{"IdleNotNumber", "idleMinutes: soon", "idleMinutes: must be a number, got \"soon\""},
        Bad{"BothFloors", "floorWatts: 100\nfloorFraction: 0.5",
            "floorWatts: set floorWatts or floorFraction, not both"},
        Bad{"NegativeFloor", "floorWatts: -5", "floorWatts: must be positive"},
        Bad{"FractionTooBig", "floorFraction: 1.5", "floorFraction: must be in (0, 1]"},
        Bad{"ThresholdTooBig", "utilizationThresholdPercent: 101",
            "utilizationThresholdPercent: must be at most 100"},
        Bad{"ThresholdNegative", "utilizationThresholdPercent: -1",
            "utilizationThresholdPercent: must be an integer from 0 to 100"},
        Bad{"NotAMap", "- 1", "(document): must be a map"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(PowerPolicyTest, FloorIsClampedIntoTheConstraints) {
  const hw::GpuSample gpu{.power_limit_watts = 700,
                          .power_limit_min_watts = 200,
                          .power_limit_max_watts = 700,
                          .power_limit_default_watts = 700};
  EXPECT_EQ(FloorWatts({}, gpu), 200);  // no floor: the minimum
  EXPECT_EQ(FloorWatts({.floor_watts = 350}, gpu), 350);
  EXPECT_EQ(FloorWatts({.floor_watts = 50}, gpu), 200);
  EXPECT_EQ(FloorWatts({.floor_watts = 900}, gpu), 700);
  EXPECT_EQ(FloorWatts({.floor_fraction = 0.5}, gpu), 350);
  EXPECT_EQ(FloorWatts({.floor_fraction = 0.1}, gpu), 200);
  EXPECT_FALSE(FloorWatts({}, hw::GpuSample{.power_limit_watts = 70}).has_value());
  EXPECT_TRUE(ValidatePowerPolicy({.enabled = true, .floor_watts = 100}).ok());
  EXPECT_FALSE(ValidatePowerPolicy({.idle_for = absl::ZeroDuration()}).ok());
}

}  // namespace
}  // namespace gpuop::agent::power
