// The XID classes against NVIDIA's XID catalogue (the resolution column of NVSentinel's
// xiderrorsmapping.csv): the XIDs issue 14 names, and the parsing of --xid-actions.
#include "agent/health/xid_classes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuop::agent {
namespace {

using ::testing::HasSubstr;

TEST(XidClassesTest, TheCatalogueResolvesEachNamedXid) {
  const std::map<uint64_t, XidAction> expected = {
      {13, XidAction::kRestartApp},      {31, XidAction::kRestartApp},
      {43, XidAction::kIgnore},          {45, XidAction::kRestartApp},
      {48, XidAction::kResetGpu},        {63, XidAction::kIgnore},
      {64, XidAction::kResetGpu},        {68, XidAction::kRestartApp},
      {74, XidAction::kResetGpu},        {79, XidAction::kRebootNode},
      {92, XidAction::kIgnore},          {94, XidAction::kRestartApp},
      {95, XidAction::kResetGpu},        {109, XidAction::kResetGpu},
      {119, XidAction::kResetGpu},       {120, XidAction::kResetGpu},
      {140, XidAction::kResetGpu},       {144, XidAction::kResetGpu},
      {150, XidAction::kResetGpu},       {151, XidAction::kRebootNode},
      {154, XidAction::kIgnore},         {160, XidAction::kRebootNode},
      {54, XidAction::kContactSupport},  {78, XidAction::kContactSupport},
      {159, XidAction::kContactSupport}, {1, XidAction::kContactSupport},
      {170, XidAction::kContactSupport},
  };
  for (const auto& [xid, action] : expected) {
    EXPECT_EQ(CatalogueXidAction(xid), action) << "XID " << xid;
  }
}

TEST(XidClassesTest, OnlyResetRebootAndSupportMarkAGpu) {
  EXPECT_FALSE(MarksUnhealthy(XidAction::kIgnore));
  EXPECT_FALSE(MarksUnhealthy(XidAction::kRestartApp));
  EXPECT_TRUE(MarksUnhealthy(XidAction::kResetGpu));
  EXPECT_TRUE(MarksUnhealthy(XidAction::kRebootNode));
  EXPECT_TRUE(MarksUnhealthy(XidAction::kContactSupport));
}

TEST(XidClassesTest, OverridesReplaceTheCatalogue) {
  const XidClassTable table({{109, XidAction::kRestartApp}});
  EXPECT_EQ(table.Lookup(109), XidAction::kRestartApp);
  EXPECT_EQ(table.Lookup(79), XidAction::kRebootNode);
}

TEST(XidClassesTest, ParsesActionsAndNamesTheBadEntry) {
  absl::StatusOr<std::map<uint64_t, XidAction>> parsed =
      ParseXidActions("109=RestartApp, 74=RebootNode");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->at(109), XidAction::kRestartApp);
  EXPECT_EQ(parsed->at(74), XidAction::kRebootNode);
  EXPECT_TRUE(ParseXidActions("")->empty());
  EXPECT_THAT(ParseXidActions("109=Reboot").status().message(),
              HasSubstr("\"109=Reboot\": the action must be"));
  EXPECT_THAT(ParseXidActions("x=Ignore").status().message(),
              HasSubstr("\"x=Ignore\": expected <XID>=<action>"));
  for (XidAction a : {XidAction::kIgnore, XidAction::kRestartApp, XidAction::kResetGpu,
                      XidAction::kRebootNode, XidAction::kContactSupport}) {
    EXPECT_EQ(ParseXidAction(XidActionName(a)), a);
  }
}

}  // namespace
}  // namespace gpuop::agent
