#include "operator/upgrade/planner.h"

// The planner over whole fleets: slots, timeouts, restarts.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "operator/upgrade/planner_test_util.h"

namespace gpuop::op::upgrade {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using namespace ::gpuop::op::upgrade::testing;  // NOLINT: the planner's test vocabulary

TEST(PlanTest, StartsOnlyAsManyNodesAsTheSlotsAllowInNameOrder) {
  UpgradeSpec spec = Spec();
  spec.max_parallel = 2;
  UpgradeSnapshot snapshot;
  for (const char* name : {"d", "b", "a", "c"}) {
    snapshot.nodes.push_back(Outdated(Gpu(name, "upgrade-required")));
  }
  const UpgradePlan plan = Plan(snapshot, spec, kNow);
  ASSERT_EQ(plan.nodes.size(), 4u);
  EXPECT_EQ(plan.nodes[0].node, "a");
  EXPECT_EQ(plan.nodes[0].to, UpgradeState::kCordonRequired);
  EXPECT_EQ(plan.nodes[1].to, UpgradeState::kCordonRequired);
  EXPECT_EQ(plan.nodes[2].to, UpgradeState::kUpgradeRequired);
  EXPECT_EQ(plan.nodes[2].message, "waiting for a free upgrade slot");
  EXPECT_EQ(plan.nodes[2].detail, "0 nodes are upgrading and spec.upgrade.maxParallel is 2");
  EXPECT_EQ(plan.nodes[3].to, UpgradeState::kUpgradeRequired);
  EXPECT_EQ(plan.counts.Get(UpgradeState::kCordonRequired), 2);
  EXPECT_EQ(plan.counts.Get(UpgradeState::kUpgradeRequired), 2);
}

TEST(PlanTest, NodesInProgressHoldSlotsAndFailedOnesDoNot) {
  UpgradeSpec spec = Spec();
  spec.max_parallel = 2;
  UpgradeSnapshot snapshot;
  snapshot.nodes.push_back(Outdated(Gpu("a", "upgrade-failed")));
  snapshot.nodes.push_back(Outdated(Gpu("b", "upgrade-failed")));
  NodeSnapshot draining = Outdated(Gpu("c", "drain-required"));
  draining.unschedulable = true;
  snapshot.nodes.push_back(draining);
  snapshot.nodes.push_back(Outdated(Gpu("d", "upgrade-required")));
  snapshot.nodes.push_back(Outdated(Gpu("e", "upgrade-required")));
  const UpgradePlan plan = Plan(snapshot, spec, kNow);
  EXPECT_EQ(plan.nodes[3].to, UpgradeState::kCordonRequired);
  EXPECT_EQ(plan.nodes[4].to, UpgradeState::kUpgradeRequired);
  EXPECT_EQ(plan.nodes[0].to, UpgradeState::kUpgradeFailed);
}

TEST(PlanTest, CordonedAndNotReadyNodesUseUpMaxUnavailable) {
  UpgradeSpec spec = Spec();
  spec.max_parallel = 0;
  spec.max_unavailable = {.value = 2};
  UpgradeSnapshot snapshot;
  NodeSnapshot cordoned = Gpu("a", "upgrade-done");
  cordoned.unschedulable = true;
  NodeSnapshot not_ready = Gpu("b", "upgrade-done");
  not_ready.ready = false;
  snapshot.nodes = {cordoned, not_ready, Outdated(Gpu("c", "upgrade-required"))};
  const UpgradePlan plan = Plan(snapshot, spec, kNow);
  EXPECT_EQ(plan.nodes[2].to, UpgradeState::kUpgradeRequired);
  EXPECT_THAT(plan.nodes[2].detail, HasSubstr("2 nodes are unavailable"));
  EXPECT_THAT(plan.nodes[2].Describe(),
              HasSubstr("waiting for a free upgrade slot: 2 nodes are unavailable"));
}

TEST(PlanTest, AnAlreadyCordonedNodeStartsWithoutNewUnavailability) {
  UpgradeSpec spec = Spec();
  spec.max_parallel = 2;
  spec.max_unavailable = {.value = 1};
  NodeSnapshot cordoned = Outdated(Gpu("b", "upgrade-required"));
  cordoned.unschedulable = true;
  UpgradeSnapshot snapshot{.nodes = {Outdated(Gpu("a", "upgrade-required")), cordoned}};
  const UpgradePlan plan = Plan(snapshot, spec, kNow);
  EXPECT_EQ(plan.nodes[0].to, UpgradeState::kUpgradeRequired);
  EXPECT_EQ(plan.nodes[1].to, UpgradeState::kCordonRequired);
  spec.max_parallel = 1;
  snapshot.nodes[0].state_label = "drain-required";
  snapshot.nodes[0].unschedulable = true;
  EXPECT_EQ(Plan(snapshot, spec, kNow).nodes[1].to, UpgradeState::kUpgradeRequired);
}

TEST(PlanTest, StartingACordonedNodeRecordsThatItWasCordoned) {
  NodeSnapshot cordoned = Outdated(Gpu("a", "upgrade-required"));
  cordoned.unschedulable = true;
  NodePlan p = PlanOne(cordoned);
  EXPECT_EQ(p.to, UpgradeState::kCordonRequired);
  EXPECT_EQ(p.set_cordoned_before, true);
  p = PlanOne(Outdated(Gpu("b", "upgrade-required")));
  EXPECT_EQ(p.set_cordoned_before, false);
}

TEST(PlanTest, SkippedHostDriverAndDriverlessNodesAreLeftAloneAndNotCounted) {
  UpgradeSpec spec = Spec();
  spec.max_unavailable = {.value = 50, .percent = true};
  NodeSnapshot skipped = Outdated(Gpu("a", "upgrade-done"));
  skipped.skip = true;
  skipped.unschedulable = true;
  NodeSnapshot host = Outdated(Gpu("b", "drain-required"));
  host.host_driver = true;
  NodeSnapshot amd = Gpu("e", "");
  amd.no_driver = true;
  amd.unschedulable = true;
  UpgradeSnapshot snapshot{.nodes = {skipped, host, Outdated(Gpu("c", "upgrade-required")),
                                     Outdated(Gpu("d", "upgrade-required")), amd}};
  const UpgradePlan plan = Plan(snapshot, spec, kNow);
  EXPECT_TRUE(plan.nodes[0].excluded);
  EXPECT_FALSE(plan.nodes[0].HasWork());
  EXPECT_EQ(plan.nodes[0].to, UpgradeState::kUpgradeDone);
  EXPECT_THAT(plan.nodes[0].detail, HasSubstr("gpuop.io/driver-upgrade.skip=true"));
  EXPECT_TRUE(plan.nodes[1].excluded);
  EXPECT_FALSE(plan.nodes[1].HasWork());
  EXPECT_TRUE(plan.nodes[4].excluded);
  EXPECT_FALSE(plan.nodes[4].HasWork());
  EXPECT_EQ(plan.nodes[4].detail, "no driver container on the node");
  EXPECT_EQ(plan.counts.excluded, 3);
  // 50% of the two managed nodes is one, and the cordoned skipped node does not use it up.
  EXPECT_EQ(plan.nodes[2].to, UpgradeState::kCordonRequired);
  EXPECT_EQ(plan.nodes[3].to, UpgradeState::kUpgradeRequired);
}

TEST(PlanTest, TimeoutsCountFromTheSinceAnnotation) {
  UpgradeSpec spec = Spec();
  spec.drain_enabled = true;
  NodeSnapshot n = Outdated(Gpu("a", "drain-required"));
  n.pods = {Pod("web")};
  n.since = kNow - absl::Minutes(9);
  NodePlan p = PlanOne(n, spec);
  EXPECT_EQ(p.to, UpgradeState::kDrainRequired);
  ASSERT_TRUE(p.wait.has_value());
  EXPECT_EQ(p.wait->elapsed, absl::Minutes(9));
  EXPECT_EQ(p.Describe(), "evicting 1 pod: work/web for 9m of 10m");
  n.since = kNow - absl::Minutes(10);
  EXPECT_EQ(PlanOne(n, spec).to, UpgradeState::kUpgradeFailed);
}

TEST(PlanTest, ZeroTimeoutWaitsForever) {
  UpgradeSpec spec = Spec();
  spec.wait_for_jobs_selector = "app=train";
  NodeSnapshot n = Outdated(Gpu("a", "wait-for-jobs-required"));
  n.pods = {WithLabels(Pod("job"), {{"app", "train"}})};
  n.since = kNow - absl::Hours(100);
  const NodePlan p = PlanOne(n, spec);
  EXPECT_EQ(p.to, UpgradeState::kWaitForJobsRequired);
  EXPECT_EQ(p.Describe(), "waiting for 1 job (selector app=train): work/job for 100h (no timeout)");
}

TEST(PlanTest, AMissingSinceIsStampedAndCountsAsJustStarted) {
  UpgradeSpec spec = Spec();
  spec.drain_enabled = true;
  NodeSnapshot n = Outdated(Gpu("a", "drain-required"));
  n.pods = {Pod("web")};
  n.since.reset();
  const NodePlan p = PlanOne(n, spec);
  EXPECT_EQ(p.to, UpgradeState::kDrainRequired);
  EXPECT_TRUE(p.stamp_since);
  EXPECT_EQ(p.wait->elapsed, absl::ZeroDuration());
}

TEST(PlanTest, WaitingWithTheSameMessageHasNoWork) {
  NodeSnapshot n = Gpu("a", "validation-required");
  n.validator_ready = false;
  n.message = PlanOne(n).message;
  EXPECT_FALSE(PlanOne(n).HasWork());
}

bool SamePlan(const NodePlan& a, const NodePlan& b) {
  return a.node == b.node && a.from == b.from && a.to == b.to && a.action == b.action &&
         a.pods == b.pods && a.message == b.message && a.detail == b.detail &&
         a.stamp_since == b.stamp_since && a.set_cordoned_before == b.set_cordoned_before &&
         a.grace_seconds == b.grace_seconds;
}

// The cluster's answer to a plan: what the executor's writes and the DaemonSet controller do to
// the snapshot.
void Apply(const NodePlan& p, NodeSnapshot& n, absl::Time now) {
  if (p.Transition()) {
    n.state_label = std::string(UpgradeStateLabelValue(p.to));
    n.since = now;
  }
  if (p.stamp_since) n.since = now;
  n.message = p.message;
  if (p.set_cordoned_before.has_value()) n.cordoned_before = *p.set_cordoned_before;
  if (p.action == Action::kCordon) n.unschedulable = true;
  if (p.action == Action::kUncordon) n.unschedulable = false;
  if (p.action == Action::kDeletePods || p.action == Action::kEvictPods) {
    std::erase_if(n.pods, [&](const PodInfo& pod) {
      return std::any_of(p.pods.begin(), p.pods.end(),
                         [&](const PodRef& r) { return r.name == pod.name; });
    });
  }
  if (p.action == Action::kDeleteDriverPod) n.driver_pod->revision = *n.update_revision;
}

TEST(PlanTest, ARestartAnywhereGivesTheSamePlanAndTheUpgradeCompletes) {
  UpgradeSpec spec = Spec();
  spec.max_parallel = 1;
  spec.drain_enabled = true;
  UpgradeSnapshot snapshot;
  for (const char* name : {"c", "a", "b"}) {
    NodeSnapshot n = Outdated(Gpu(name, "upgrade-done"));
    n.pods = {GpuPod(absl::StrCat("train-", name)), Pod(absl::StrCat("web-", name))};
    snapshot.nodes.push_back(n);
  }
  snapshot.nodes[2].unschedulable = true;  // b was cordoned by someone before the upgrade
  std::map<std::string, std::vector<UpgradeState>> states;
  absl::Time now = kNow;
  for (int pass = 0; pass < 40; ++pass) {
    const UpgradePlan plan = Plan(snapshot, spec, now);
    // An operator restarted now sees the same cluster and must decide the same.
    const UpgradePlan again = Plan(snapshot, spec, now);
    ASSERT_EQ(plan.nodes.size(), again.nodes.size());
    for (size_t i = 0; i < plan.nodes.size(); ++i) {
      EXPECT_TRUE(SamePlan(plan.nodes[i], again.nodes[i])) << plan.nodes[i].node;
    }
    EXPECT_LE(plan.counts.InProgress(), 1);
    for (const NodePlan& p : plan.nodes) {
      auto n = std::find_if(snapshot.nodes.begin(), snapshot.nodes.end(),
                            [&](const NodeSnapshot& s) { return s.name == p.node; });
      Apply(p, *n, now);
      if (states[p.node].empty() || states[p.node].back() != p.to) states[p.node].push_back(p.to);
    }
    now += absl::Seconds(5);
  }
  for (const NodeSnapshot& n : snapshot.nodes) {
    EXPECT_EQ(n.state_label, "upgrade-done") << n.name;
    EXPECT_EQ(n.unschedulable, n.name == "b") << n.name;
    EXPECT_THAT(n.pods, IsEmpty()) << n.name;
  }
  EXPECT_THAT(states["a"],
              ElementsAre(UpgradeState::kUpgradeRequired, UpgradeState::kCordonRequired,
                          UpgradeState::kWaitForJobsRequired, UpgradeState::kPodDeletionRequired,
                          UpgradeState::kDrainRequired, UpgradeState::kPodRestartRequired,
                          UpgradeState::kValidationRequired, UpgradeState::kUncordonRequired,
                          UpgradeState::kUpgradeDone));
}

TEST(PlanTest, AFailingNodeDoesNotBlockTheOthers) {
  UpgradeSpec spec = Spec();
  spec.max_parallel = 1;
  spec.drain_enabled = true;
  UpgradeSnapshot snapshot;
  for (const char* name : {"a", "b"}) {
    NodeSnapshot n = Outdated(Gpu(name, "upgrade-done"));
    n.pods = {Pod(absl::StrCat("web-", name))};
    snapshot.nodes.push_back(n);
  }
  absl::Time now = kNow;
  for (int pass = 0; pass < 60; ++pass) {
    const UpgradePlan plan = Plan(snapshot, spec, now);
    for (size_t i = 0; i < plan.nodes.size(); ++i) {
      NodePlan p = plan.nodes[i];
      // A PodDisruptionBudget never lets a's pod go.
      if (p.node == "a" && p.action == Action::kEvictPods) p.action = Action::kNone;
      Apply(p, snapshot.nodes[i], now);
    }
    now += absl::Minutes(1);
  }
  EXPECT_EQ(snapshot.nodes[0].state_label, "upgrade-failed");
  EXPECT_FALSE(snapshot.nodes[0].unschedulable);  // its driver is untouched: back in service
  EXPECT_THAT(snapshot.nodes[0].message, HasSubstr("drain did not finish within 10m"));
  EXPECT_EQ(snapshot.nodes[1].state_label, "upgrade-done");
  EXPECT_FALSE(snapshot.nodes[1].unschedulable);
}

}  // namespace
}  // namespace gpuop::op::upgrade
