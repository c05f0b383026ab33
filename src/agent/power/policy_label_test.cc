#include "agent/power/policy_label.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/power/power_policy.h"

namespace gpuop::agent::power {
namespace {

using ::testing::HasSubstr;

TEST(PowerPolicyLabelTest, RoundTrips) {
  const LabelPolicy on{.idle_after = absl::Minutes(15), .floor_percent = 50};
  EXPECT_EQ(FormatPowerPolicyLabel(on), "idle-900s.floor-50pct");
  EXPECT_EQ(ParsePowerPolicyLabel("idle-900s.floor-50pct").value_or(LabelPolicy{}), on);
  EXPECT_EQ(FormatPowerPolicyLabel({.enabled = false}), "off");
  EXPECT_FALSE(ParsePowerPolicyLabel("off").value_or(LabelPolicy{}).enabled);
}

TEST(PowerPolicyLabelTest, BadValuesNameTheLabelAndTheProblem) {
  for (const char* value :
       {"", "on", "idle-0s.floor-50pct", "idle-900.floor-50pct", "idle-900s.floor-0pct",
        "idle-900s.floor-101pct", "idle-x.floor-5pct", "idle-900s"}) {
    auto parsed = ParsePowerPolicyLabel(value);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << value;
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("gpuop.io/power.policy"))
        << value;
  }
}

TEST(PowerPolicyLabelTest, TheLabelOverridesTheFlagsAndABadOneIsAnError) {
  const PowerPolicy flags{.enabled = true, .idle_for = absl::Minutes(10), .floor_watts = 300};
  EXPECT_EQ(PolicyForLabel(flags, "")->floor_watts, 300);
  auto pool = PolicyForLabel(flags, "idle-1800s.floor-40pct");
  ASSERT_TRUE(pool.ok());
  EXPECT_TRUE(pool->enabled);
  EXPECT_EQ(pool->idle_for, absl::Minutes(30));
  EXPECT_FALSE(pool->floor_watts.has_value());
  EXPECT_EQ(pool->floor_fraction, 0.4);
  EXPECT_TRUE(ValidatePowerPolicy(*pool).ok());
  EXPECT_FALSE(PolicyForLabel(flags, "off")->enabled);
  EXPECT_EQ(PolicyForLabel(flags, "idle-x").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpuop::agent::power
