// The XID checks as NVIDIA's device plugin resolves DP_DISABLE_HEALTHCHECKS and
// DP_ENABLE_HEALTHCHECKS (its documented cases), with gpuop's --ignore-xids on top.
#include "agent/health/xid_checks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuop::agent {
namespace {

using ::testing::ElementsAre;

TEST(XidChecksTest, TheApplicationErrorsAreIgnoredByDefault) {
  const XidChecks checks = ResolveXidChecks({});
  // NVIDIA's plugin's list, but for 109, which the catalogue resolves with a GPU reset.
  for (uint64_t xid : {13, 31, 43, 45, 68}) EXPECT_TRUE(checks.Ignored(xid)) << xid;
  // The catalogue's informational (63, 92) and application (94) XIDs, which NVIDIA's plugin
  // counts against the GPU.
  for (uint64_t xid : {63, 92, 94}) EXPECT_TRUE(checks.Ignored(xid)) << xid;
  for (uint64_t xid : {48, 64, 74, 79, 95, 109, 119, 120, 140}) {
    EXPECT_FALSE(checks.Ignored(xid)) << xid;
  }
}

TEST(XidChecksTest, ActionsFollowTheClassesAndTheOverrides) {
  XidChecks checks = ResolveXidChecks({});
  EXPECT_EQ(checks.Action(13), XidAction::kRestartApp);
  EXPECT_EQ(checks.Action(63), XidAction::kIgnore);
  EXPECT_EQ(checks.Action(48), XidAction::kResetGpu);
  EXPECT_EQ(checks.Action(79), XidAction::kRebootNode);
  EXPECT_EQ(checks.Action(1), XidAction::kContactSupport);
  EXPECT_EQ(checks.Action(999), XidAction::kContactSupport) << "NVML's unknown XID";
  checks =
      ResolveXidChecks({.actions = {{109, XidAction::kRestartApp}, {74, XidAction::kRebootNode}}});
  EXPECT_TRUE(checks.Ignored(109));
  EXPECT_EQ(checks.Action(74), XidAction::kRebootNode);
  // An ignored XID asks for nothing; a checked application XID asks for a reset.
  checks = ResolveXidChecks({.ignore_xids = {48}, .enable = "13"});
  EXPECT_EQ(checks.Action(48), XidAction::kIgnore);
  EXPECT_EQ(checks.Action(13), XidAction::kResetGpu);
}

TEST(XidChecksTest, IgnoreXidsAddsUnlessToldToReplace) {
  XidChecks checks = ResolveXidChecks({.ignore_xids = {94}});
  EXPECT_TRUE(checks.Ignored(94));
  EXPECT_TRUE(checks.Ignored(13)) << "the defaults stay";
  checks = ResolveXidChecks({.ignore_xids = {94}, .replace_default_ignored = true});
  EXPECT_TRUE(checks.Ignored(94));
  EXPECT_FALSE(checks.Ignored(13));
  checks = ResolveXidChecks({.replace_default_ignored = true});
  EXPECT_FALSE(checks.Ignored(13)) << "an empty replacement checks every XID";
}

TEST(XidChecksTest, DisableAllOrXidsTurnsEveryCheckOff) {
  for (const char* value : {"all", "ALL", "xids", "gpu,xids"}) {
    const XidChecks checks = ResolveXidChecks({.disable = value});
    EXPECT_TRUE(checks.all_off) << value;
    EXPECT_TRUE(checks.Ignored(79)) << value;
    EXPECT_TRUE(checks.Ignored(555)) << value;
  }
}

TEST(XidChecksTest, DisableListsAddToTheIgnoredOnesAndSkipWhatIsNoXid) {
  const XidChecks checks = ResolveXidChecks({.disable = "68,not-an-int,67"});
  EXPECT_FALSE(checks.all_off);
  EXPECT_TRUE(checks.Ignored(67));
  EXPECT_TRUE(checks.Ignored(13));
  EXPECT_FALSE(checks.Ignored(79));
  EXPECT_THAT(checks.skipped, ElementsAre("not-an-int"));
}

TEST(XidChecksTest, EnableOverridesDisable) {
  XidChecks checks = ResolveXidChecks({.disable = "11", .enable = "11"});
  EXPECT_FALSE(checks.Ignored(11));
  EXPECT_TRUE(checks.Ignored(13));
  // Single XIDs checked while every other check is off.
  checks = ResolveXidChecks({.disable = "all", .enable = "48,79"});
  EXPECT_FALSE(checks.Ignored(48));
  EXPECT_FALSE(checks.Ignored(79));
  EXPECT_TRUE(checks.Ignored(94));
  // A default application error checked after all.
  checks = ResolveXidChecks({.enable = "13"});
  EXPECT_FALSE(checks.Ignored(13));
  EXPECT_TRUE(checks.Ignored(31));
}

TEST(XidChecksTest, EnableAllChecksEveryXid) {
  const XidChecks checks = ResolveXidChecks({.ignore_xids = {94}, .enable = "all"});
  for (uint64_t xid : {13, 31, 43, 45, 68, 109, 94, 555}) EXPECT_FALSE(checks.Ignored(xid)) << xid;
}

}  // namespace
}  // namespace gpuop::agent
