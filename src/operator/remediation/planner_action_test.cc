// Remediation runs the repair the node's required action asks for (the agent's
// GPURecoveryAction condition) in place of the policy's repair step.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "operator/remediation/planner.h"

namespace gpuop::op::remediation {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

// An unhealthy node with no pods to evict and a driver pod, needing `action`.
NodeState Needing(const std::string& action, bool driver_pod = true) {
  NodeState n{.name = "a",
              .healthy = false,
              .health_message = "GPU 3: XID 48, needs ResetGpu",
              .required_action = action,
              .ready = true,
              .pods_listed = true};
  if (driver_pod) {
    n.driver_pod = NodeState::DriverPod{
        .ns = "gpuop-system", .name = "driver-x", .ready = true, .created = kNow - absl::Hours(1)};
  }
  return n;
}

NodePlan PlanFor(const NodeState& n, const RemediationSpec& spec = {}) {
  const Plan plan = PlanRemediation({n}, spec, /*validation_enabled=*/false, kNow);
  EXPECT_EQ(plan.nodes.size(), 1u);
  return plan.nodes.empty() ? NodePlan{} : plan.nodes.front();
}

TEST(RemediationActionTest, TheRepairFollowsTheAction) {
  using S = RemediationStep;
  const RemediationSpec spec;  // Taint, Drain, RestartDriver, Validate, Untaint
  EXPECT_THAT(StepsFor(spec, Needing("ResetGpu"), "ResetGpu"),
              ElementsAre(S::kTaint, S::kDrain, S::kRestartDriver, S::kValidate, S::kUntaint));
  EXPECT_THAT(StepsFor(spec, Needing("ResetGpu", false), "ResetGpu"),
              ElementsAre(S::kTaint, S::kDrain, S::kRequestReboot, S::kValidate, S::kUntaint))
      << "a host driver is not reloaded: a reboot resets its GPUs";
  EXPECT_THAT(StepsFor(spec, Needing("RebootNode"), "RebootNode"),
              ElementsAre(S::kTaint, S::kDrain, S::kRequestReboot, S::kValidate, S::kUntaint));
  EXPECT_THAT(StepsFor(spec, Needing("ContactSupport"), "ContactSupport"),
              ElementsAre(S::kTaint, S::kDrain));
  EXPECT_THAT(StepsFor(spec, Needing(""), ""),
              ElementsAre(S::kTaint, S::kDrain, S::kRestartDriver, S::kValidate, S::kUntaint));
  RemediationSpec no_repair;
  no_repair.steps = {S::kTaint, S::kValidate, S::kUntaint};
  EXPECT_THAT(StepsFor(no_repair, Needing("RebootNode"), "RebootNode"),
              ElementsAre(S::kTaint, S::kValidate, S::kUntaint))
      << "a policy without a repair step runs none";
}

TEST(RemediationActionTest, ARebootIsRequestedWhereTheGpusNeedOne) {
  const NodePlan p = PlanFor(Needing("RebootNode"));
  EXPECT_EQ(p.state, kInProgress);
  EXPECT_EQ(p.action, "RebootNode");
  EXPECT_EQ(p.step, "RequestReboot");
  EXPECT_TRUE(p.request_reboot);
  EXPECT_EQ(p.pod_action, PodAction::kNone) << "the driver pod is left alone";
}

TEST(RemediationActionTest, AResetRestartsTheDriver) {
  const NodePlan p = PlanFor(Needing("ResetGpu"));
  EXPECT_EQ(p.action, "ResetGpu");
  EXPECT_EQ(p.step, "RestartDriver");
  EXPECT_EQ(p.pod_action, PodAction::kDeleteDriverPod);
  EXPECT_FALSE(p.request_reboot);
}

TEST(RemediationActionTest, ContactSupportTaintsDrainsAndWaitsForAPerson) {
  const NodePlan p = PlanFor(Needing("ContactSupport"));
  EXPECT_EQ(p.state, kFailed);
  EXPECT_TRUE(p.taint);
  EXPECT_FALSE(p.request_reboot);
  EXPECT_EQ(p.pod_action, PodAction::kNone);
  EXPECT_THAT(p.message, HasSubstr("need a person (ContactSupport)"));
}

TEST(RemediationActionTest, TheActionStaysWhileTheGpusRecover) {
  // Rebooted: the GPUs are healthy, the agent reports no action; the steps stay the reboot's.
  NodeState n = Needing("");
  n.healthy = true;
  n.state = kInProgress;
  n.step = "RequestReboot";
  n.remediation_action = "RebootNode";
  n.tainted = true;
  n.since = kNow - absl::Minutes(5);
  const NodePlan p = PlanFor(n);
  EXPECT_EQ(p.state, kDone) << p.message;
  EXPECT_TRUE(p.untaint);
  EXPECT_EQ(p.pod_action, PodAction::kNone) << "no driver restart after the reboot";
}

TEST(RemediationActionTest, AnActionThatGrowsStartsTheStepsOver) {
  NodeState n = Needing("RebootNode");
  n.state = kInProgress;
  n.step = "RestartDriver";
  n.remediation_action = "ResetGpu";
  n.tainted = true;
  n.since = kNow - absl::Minutes(1);
  const NodePlan p = PlanFor(n);
  EXPECT_EQ(p.action, "RebootNode");
  EXPECT_EQ(p.step, "RequestReboot");
  EXPECT_TRUE(p.request_reboot);
}

}  // namespace
}  // namespace gpuop::op::remediation
