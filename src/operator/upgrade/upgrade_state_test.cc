#include "operator/upgrade/upgrade_state.h"

#include <gtest/gtest.h>

namespace gpuop::op::upgrade {
namespace {

TEST(UpgradeStateTest, LabelValuesRoundTrip) {
  for (UpgradeState state : kAllUpgradeStates) {
    EXPECT_EQ(ParseUpgradeState(UpgradeStateLabelValue(state)), state);
  }
  EXPECT_EQ(ParseUpgradeState(""), UpgradeState::kUnknown);
  EXPECT_EQ(ParseUpgradeState("drain-required"), UpgradeState::kDrainRequired);
  EXPECT_EQ(ParseUpgradeState("Drain-Required"), std::nullopt);
}

TEST(UpgradeStateTest, OnlyStepsBetweenStartAndEndHoldASlot) {
  EXPECT_FALSE(InProgress(UpgradeState::kUnknown));
  EXPECT_FALSE(InProgress(UpgradeState::kUpgradeRequired));
  EXPECT_TRUE(InProgress(UpgradeState::kCordonRequired));
  EXPECT_TRUE(InProgress(UpgradeState::kUncordonRequired));
  EXPECT_FALSE(InProgress(UpgradeState::kUpgradeDone));
  EXPECT_FALSE(InProgress(UpgradeState::kUpgradeFailed));
}

TEST(UpgradeStateTest, EventReasons) {
  EXPECT_EQ(UpgradeStateReason(UpgradeState::kPodRestartRequired), "PodRestartRequired");
  EXPECT_EQ(UpgradeStateReason(UpgradeState::kUpgradeFailed), "UpgradeFailed");
}

}  // namespace
}  // namespace gpuop::op::upgrade
