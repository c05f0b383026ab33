// Driver changes that did not start as an upgrade go through the upgrade all the same: a driver
// pod started over a loaded driver waits for the node to be drained (safe load), and a driver
// turned off for a node (spec.components.driver off, gpuop.io/deploy.operands=false, the node
// leaving the policy) leaves it only after cordon, drain and the clients' pause.
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
using ::testing::Pair;
using testing::PlanOne;
using testing::Spec;

constexpr char kPlugin[] = "gpuop.io/deploy.device-plugin";
constexpr char kDriver[] = "gpuop.io/deploy.driver";

// A current driver pod that waits in its safe-load step.
NodeSnapshot Waiting(const std::string& state) {
  NodeSnapshot n = Gpu("gpu-1", state);
  n.driver_pod->ready = false;
  n.driver_pod->waits_for_safe_load = true;
  n.safe_load_pod = n.driver_pod->name;
  n.validator_ready.reset();
  return n;
}

TEST(SafeLoadTest, AWaitingDriverPodStartsTheUpgrade) {
  NodePlan p = PlanOne(Waiting("upgrade-done"));
  EXPECT_EQ(p.to, UpgradeState::kUpgradeRequired);
  EXPECT_THAT(p.message,
              HasSubstr("driver pod driver-gpu-1 waits to load until the node is drained"));
  EXPECT_EQ(PlanOne(Waiting("")).to, UpgradeState::kUpgradeRequired);
  // It takes a slot like any upgrade.
  EXPECT_EQ(PlanOne(Waiting("upgrade-required")).to, UpgradeState::kCordonRequired);
  UpgradeSpec manual = Spec();
  manual.auto_upgrade = false;
  p = PlanOne(Waiting("upgrade-required"), manual);
  EXPECT_EQ(p.to, UpgradeState::kUpgradeRequired);
  EXPECT_THAT(p.message, HasSubstr("removes gpuop.io/driver-wait-for-safe-load"));
}

TEST(SafeLoadTest, TheDriverLoadsOnlyOnceTheClientsAreStopped) {
  NodeSnapshot n = Waiting("pod-restart-required");
  n.clients.to_pause = {kPlugin};
  n.clients.running = {"gpuop-device-plugin-a"};
  NodePlan p = PlanOne(n);
  EXPECT_FALSE(p.release_safe_load);
  EXPECT_THAT(p.set_labels, ElementsAre(Pair(kPlugin, "paused-for-driver-upgrade")));

  n.clients = {.paused = {kPlugin}};
  p = PlanOne(n);
  EXPECT_TRUE(p.release_safe_load);
  EXPECT_EQ(p.action, Action::kNone) << "the waiting pod is the new one: nothing to delete";
  EXPECT_THAT(p.message, HasSubstr("letting driver pod driver-gpu-1 load"));
  const kube::Json patch = Executor::NodePatch(p, p.message, testing::kNow);
  EXPECT_TRUE(patch["metadata"]["annotations"]["gpuop.io/driver-wait-for-safe-load"].is_null());
  EXPECT_TRUE(patch["metadata"]["annotations"].contains("gpuop.io/driver-wait-for-safe-load"));

  // Released: the pod loads, becomes Ready and the clients come back.
  NodeSnapshot loaded = Gpu("gpu-1", "pod-restart-required");
  loaded.clients = {.paused = {kPlugin}};
  p = PlanOne(loaded);
  EXPECT_EQ(p.to, UpgradeState::kValidationRequired);
  EXPECT_THAT(p.set_labels, ElementsAre(Pair(kPlugin, "true")));
}

// A node whose running driver is to leave it.
NodeSnapshot Leaving(const std::string& state, const char* reason = "driver-disabled") {
  NodeSnapshot n = Gpu("gpu-1", state);
  n.removal = reason;
  return n;
}

TEST(DriverRemovalTest, ADriverTurnedOffLeavesThroughTheUpgrade) {
  NodePlan p = PlanOne(Leaving("upgrade-done"));
  EXPECT_EQ(p.to, UpgradeState::kUpgradeRequired);
  EXPECT_EQ(p.message, "the driver leaves the node: spec.components.driver is off");
  EXPECT_EQ(PlanOne(Leaving("upgrade-required")).to, UpgradeState::kCordonRequired);
  EXPECT_EQ(PlanOne(Leaving("upgrade-done", "node-deselected")).message,
            "the driver leaves the node: the policy no longer selects the node");
}

TEST(DriverRemovalTest, TheDeployLabelIsSwitchedOffAfterTheClientsStopped) {
  NodeSnapshot n = Leaving("pod-restart-required");
  n.clients.to_pause = {kPlugin};
  NodePlan p = PlanOne(n);
  EXPECT_THAT(p.set_labels, ElementsAre(Pair(kPlugin, "paused-for-driver-upgrade")));

  n.clients = {.paused = {kPlugin}};
  p = PlanOne(n);
  EXPECT_EQ(p.action, Action::kNone) << "the DaemonSet takes its own pod away";
  EXPECT_THAT(p.set_labels, ElementsAre(Pair(kDriver, "false")));
  EXPECT_FALSE(p.finish_removal) << "the annotation stays until the node is back in service";

  // Switched off; the pod is still going.
  n.driver_deployed = false;
  p = PlanOne(n);
  EXPECT_EQ(p.to, UpgradeState::kPodRestartRequired);
  EXPECT_THAT(p.message, HasSubstr("waiting for driver pod driver-gpu-1 to stop"));
  EXPECT_THAT(p.set_labels, IsEmpty()) << "the clients stay paused while the driver stops";

  // Gone: the clients come back (to a host driver, if the node has one) and are validated.
  n.driver_pod.reset();
  p = PlanOne(n);
  EXPECT_EQ(p.to, UpgradeState::kValidationRequired);
  EXPECT_THAT(p.set_labels, ElementsAre(Pair(kPlugin, "true")));
}

TEST(DriverRemovalTest, ValidationAndUncordonFinishTheRemoval) {
  NodeSnapshot n = Leaving("validation-required");
  n.driver_deployed = false;
  n.driver_pod.reset();
  n.validator_ready.reset();
  NodePlan p = PlanOne(n);
  EXPECT_EQ(p.to, UpgradeState::kValidationRequired);
  EXPECT_EQ(p.message, "waiting for a validator pod on the node");
  n.validator_ready = true;
  EXPECT_EQ(PlanOne(n).to, UpgradeState::kUncordonRequired);
  // A node the policy left has no validator: nothing to wait for.
  n.validator_ready.reset();
  n.validator_deployed = false;
  EXPECT_EQ(PlanOne(n).to, UpgradeState::kUncordonRequired);

  n.state_label = "uncordon-required";
  n.unschedulable = true;
  p = PlanOne(n);
  EXPECT_EQ(p.to, UpgradeState::kUpgradeDone);
  EXPECT_EQ(p.action, Action::kUncordon);
  EXPECT_TRUE(p.finish_removal);
  const kube::Json patch = Executor::NodePatch(p, p.message, testing::kNow);
  EXPECT_TRUE(patch["metadata"]["annotations"]["gpuop.io/driver-removal"].is_null());
}

TEST(DriverRemovalTest, ADriverPodThatWentOnItsOwnIsSwitchedOffAtOnce) {
  NodeSnapshot n = Leaving("pod-restart-required");
  n.driver_pod.reset();
  const NodePlan p = PlanOne(n);
  EXPECT_THAT(p.set_labels, ElementsAre(Pair(kDriver, "false")));
  EXPECT_EQ(p.to, UpgradeState::kPodRestartRequired);
}

TEST(DriverRemovalTest, AHostDriverNodeFinishesItsRemoval) {
  NodeSnapshot n = Leaving("pod-restart-required");
  n.host_driver = true;  // gpuop.io/driver.preinstalled seen while gpuop's driver ran
  EXPECT_FALSE(n.Excluded());
  n.removal.clear();
  EXPECT_TRUE(n.Excluded());
}

}  // namespace
}  // namespace gpuop::op::upgrade
