// The driver restart inside an upgrade: gpuop's GPU clients are paused and gone before the old
// driver pod is deleted and come back once the new one is Ready, a validator counts only when it
// started after the driver, and upgrades and remediation never restart the same driver.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "operator/upgrade/executor.h"
#include "operator/upgrade/planner.h"
#include "operator/upgrade/planner_test_util.h"

namespace gpuop::op::upgrade {
namespace {

using ::testing::ElementsAre;
using testing::Gpu;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::Outdated;
using ::testing::Pair;
using testing::PlanOne;
using testing::Spec;

constexpr char kPlugin[] = "gpuop.io/deploy.device-plugin";
constexpr char kValidator[] = "gpuop.io/deploy.validator";

NodeSnapshot Restarting() { return Outdated(Gpu("gpu-1", "pod-restart-required")); }

TEST(DriverRestartTest, ClientsArePausedBeforeTheDriverPodIsTouched) {
  NodeSnapshot n = Restarting();
  n.clients.to_pause = {kPlugin, kValidator};
  n.clients.running = {"gpuop-device-plugin-a", "gpuop-validator-b"};
  const NodePlan p = PlanOne(n);
  EXPECT_EQ(p.to, UpgradeState::kPodRestartRequired);
  EXPECT_EQ(p.action, Action::kNone) << "the driver pod stays while clients run";
  EXPECT_THAT(p.set_labels, ElementsAre(Pair(kPlugin, "paused-for-driver-upgrade"),
                                        Pair(kValidator, "paused-for-driver-upgrade")));
  EXPECT_EQ(p.message,
            "pausing the GPU clients before restarting the driver: device-plugin, validator");
}

TEST(DriverRestartTest, TheDriverPodWaitsUntilNoClientPodIsLeft) {
  NodeSnapshot n = Restarting();
  n.clients.paused = {kPlugin, kValidator};
  n.clients.running = {"gpuop-validator-b"};
  NodePlan p = PlanOne(n);
  EXPECT_EQ(p.action, Action::kNone);
  EXPECT_THAT(p.set_labels, IsEmpty());
  EXPECT_EQ(p.message,
            "waiting for 1 GPU client to stop before restarting the driver: gpuop-validator-b");

  n.clients.running.clear();
  p = PlanOne(n);
  EXPECT_EQ(p.action, Action::kDeleteDriverPod);
  EXPECT_THAT(testing::PodNames(p), ElementsAre("driver-gpu-1"));
  EXPECT_THAT(p.set_labels, IsEmpty()) << "the clients stay paused until the new driver is Ready";
}

TEST(DriverRestartTest, ClientsComeBackWithTheNewDriverAndOnlyANewerValidatorCounts) {
  NodeSnapshot n = Gpu("gpu-1", "pod-restart-required");  // the new pod is current and Ready
  n.clients.paused = {kPlugin, kValidator};
  NodePlan p = PlanOne(n);
  EXPECT_EQ(p.to, UpgradeState::kValidationRequired);
  EXPECT_THAT(p.set_labels, ElementsAre(Pair(kPlugin, "true"), Pair(kValidator, "true")));

  // validator_ready is what the controller found among validator pods created after the driver
  // pod: none yet.
  NodeSnapshot validating = Gpu("gpu-1", "validation-required");
  validating.validator_ready.reset();
  p = PlanOne(validating);
  EXPECT_EQ(p.to, UpgradeState::kValidationRequired);
  EXPECT_EQ(p.message, "waiting for a validator pod on the node");
}

TEST(DriverRestartTest, AFailedRestartResumesTheClients) {
  NodeSnapshot n = Restarting();
  n.since = testing::kNow - absl::Hours(2);
  n.clients.paused = {kPlugin};
  n.clients.running = {"gpuop-device-plugin-a"};  // never stopped
  UpgradeSpec spec = Spec();
  spec.pod_restart_timeout = absl::Minutes(10);
  const NodePlan p = PlanOne(n, spec);
  EXPECT_EQ(p.to, UpgradeState::kUpgradeFailed);
  EXPECT_THAT(p.message, HasSubstr("1 GPU client to stop"));
  EXPECT_THAT(p.set_labels, ElementsAre(Pair(kPlugin, "true")));
}

TEST(DriverRestartTest, APauseLeftOnANodeOutOfTheRestartIsLifted) {
  NodeSnapshot done = Gpu("gpu-1", "upgrade-done");  // e.g. the state label was set by hand
  done.clients.paused = {kPlugin};
  EXPECT_THAT(PlanOne(done).set_labels, ElementsAre(Pair(kPlugin, "true")));
  EXPECT_TRUE(PlanOne(done).HasWork());

  // Unless remediation is restarting this node's driver: the pause is its own.
  done.remediating = true;
  done.remediation_restarting_driver = true;
  EXPECT_THAT(PlanOne(done).set_labels, IsEmpty());
}

TEST(DriverRestartTest, NoUpgradeStartsOnANodeRemediationHolds) {
  NodeSnapshot n = Outdated(Gpu("gpu-1", "upgrade-required"));
  n.remediating = true;
  NodePlan p = PlanOne(n);
  EXPECT_EQ(p.to, UpgradeState::kUpgradeRequired);
  EXPECT_EQ(p.message, "waiting: remediation is working on the node");
  n.remediating = false;
  EXPECT_EQ(PlanOne(n).to, UpgradeState::kCordonRequired);
}

TEST(DriverRestartTest, ARemediationTaintCountsAsUnavailable) {
  UpgradeSpec spec = Spec();
  spec.max_unavailable = {.value = 1};
  NodeSnapshot tainted = Gpu("gpu-1");
  tainted.remediation_tainted = true;
  const NodeSnapshot waiting = Outdated(Gpu("gpu-2", "upgrade-required"));
  const UpgradePlan plan = Plan({.nodes = {tainted, waiting}}, spec, testing::kNow);
  ASSERT_EQ(plan.nodes.size(), 2u);
  EXPECT_EQ(plan.nodes[1].to, UpgradeState::kUpgradeRequired)
      << "the tainted node uses up maxUnavailable=1";
  EXPECT_EQ(plan.nodes[1].message, "waiting for a free upgrade slot");
}

TEST(DriverRestartTest, PodDeletionLeavesDaemonSetPodsAlone) {
  NodeSnapshot n = Outdated(Gpu("gpu-1", "pod-deletion-required"));
  PodInfo ds = testing::GpuPod("user-ds-pod");
  ds.daemon_set = true;
  n.pods = {ds};
  const NodePlan p = PlanOne(n);
  EXPECT_EQ(p.action, Action::kNone);
  EXPECT_EQ(p.to, UpgradeState::kPodRestartRequired);
}

TEST(DriverRestartTest, PodDeletionForceAllowsPodsWithoutAController) {
  NodeSnapshot n = Outdated(Gpu("gpu-1", "pod-deletion-required"));
  PodInfo bare = testing::GpuPod("bare");
  bare.controlled = false;
  n.pods = {bare};
  NodePlan p = PlanOne(n);
  EXPECT_EQ(p.to, UpgradeState::kUpgradeFailed);
  EXPECT_THAT(p.message,
              HasSubstr("has no controller and spec.upgrade.podDeletion.force is false"));
  UpgradeSpec spec = Spec();
  spec.pod_deletion_force = true;
  p = PlanOne(n, spec);
  EXPECT_EQ(p.action, Action::kDeletePods);
  EXPECT_EQ(p.grace_seconds, std::nullopt) << "the pod's own grace period";
}

TEST(DriverRestartTest, APoolMoveGoesThroughTheUpgradeAndSwitchesTheLabelLast) {
  NodeSnapshot n = Gpu("gpu-1", "upgrade-done");
  n.target_pool = "h100";
  n.target_daemon_set = "gpuop-driver-h100";
  NodePlan p = PlanOne(n);
  EXPECT_EQ(p.to, UpgradeState::kUpgradeRequired);
  EXPECT_EQ(p.message, "the node moves to pool h100 (DaemonSet gpuop-driver-h100)");

  n.state_label = "pod-restart-required";
  n.clients.to_pause = {kPlugin};
  p = PlanOne(n);
  EXPECT_THAT(p.set_labels, ElementsAre(Pair(kPlugin, "paused-for-driver-upgrade")));
  EXPECT_FALSE(p.finish_pool_move) << "the clients first";

  n.clients = {.paused = {kPlugin}};
  p = PlanOne(n);
  EXPECT_TRUE(p.finish_pool_move);
  EXPECT_EQ(p.action, Action::kNone) << "the old DaemonSet takes its own pod away";
  EXPECT_THAT(p.set_labels, ElementsAre(Pair("gpuop.io/driver.pool", "h100")));
  EXPECT_EQ(p.message, "moving the node to pool h100 (DaemonSet gpuop-driver-h100)");
  const kube::Json patch = Executor::NodePatch(p, p.message, testing::kNow);
  EXPECT_EQ(patch["metadata"]["labels"]["gpuop.io/driver.pool"], "h100");
  EXPECT_TRUE(patch["metadata"]["annotations"]["gpuop.io/driver-pool-target"].is_null());
}

}  // namespace
}  // namespace gpuop::op::upgrade
