#include "operator/upgrade/planner.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"

namespace gpuop::op::upgrade {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const absl::Time kNow = absl::FromUnixSeconds(1'700'000'000);

// A managed GPU node whose driver pod is current ("new") and Ready, validated, in `state`,
// which it entered a minute ago.
NodeSnapshot Gpu(const std::string& name, const std::string& state = "") {
  return NodeSnapshot{.name = name,
                      .uid = "uid-" + name,
                      .state_label = state,
                      .ready = true,
                      .since = kNow - absl::Minutes(1),
                      .driver_daemon_set = "gpuop-driver",
                      .update_revision = "new",
                      .driver_pod = DriverPod{.ns = "gpuop-system",
                                              .name = "driver-" + name,
                                              .owner = "gpuop-driver",
                                              .revision = "new",
                                              .ready = true},
                      .validator_ready = true,
                      .pods_listed = true};
}

NodeSnapshot Outdated(NodeSnapshot n) {
  n.driver_pod->revision = "old";
  return n;
}

PodInfo Pod(const std::string& name) {
  return PodInfo{
      .ns = "work", .name = name, .uid = "uid-" + name, .phase = "Running", .controlled = true};
}
PodInfo GpuPod(const std::string& name) {
  PodInfo p = Pod(name);
  p.uses_gpu = true;
  return p;
}
PodInfo WithLabels(PodInfo p, std::map<std::string, std::string> labels) {
  p.labels = kube::Labels(labels);
  return p;
}

UpgradeSpec Spec() {
  UpgradeSpec spec;
  spec.max_parallel = 0;
  spec.max_unavailable = {.value = 100, .percent = true};
  return spec;
}

NodePlan PlanOne(const NodeSnapshot& node, const UpgradeSpec& spec = Spec(),
                 bool validation = true) {
  UpgradePlan plan = Plan({.nodes = {node}, .validation_enabled = validation}, spec, kNow);
  EXPECT_EQ(plan.nodes.size(), 1u);
  return plan.nodes.front();
}

std::vector<std::string> PodNames(const NodePlan& p) {
  std::vector<std::string> out;
  for (const PodRef& r : p.pods) out.push_back(r.name);
  return out;
}

// One rule of the state machine: a node, a spec, and what the plan must say.
struct Case {
  std::string name;
  NodeSnapshot node;
  UpgradeSpec spec = Spec();
  UpgradeState to;
  Action action = Action::kNone;
  std::string message;  // a substring of the plan's message; "" for an empty message
  std::vector<std::string> pods = {};
  bool validation = true;
};

std::vector<Case> Cases() {
  std::vector<Case> cases;
  auto add = [&](Case c) { cases.push_back(std::move(c)); };
  UpgradeSpec jobs = Spec();
  jobs.wait_for_jobs_selector = "app=train";
  jobs.wait_for_jobs_timeout = absl::Minutes(10);
  UpgradeSpec drain = Spec();
  drain.drain_enabled = true;
  UpgradeSpec force_drain = drain;
  force_drain.drain_force = true;
  UpgradeSpec drain_some = drain;
  drain_some.drain_selector = "tier in (batch)";

  // unknown and upgrade-done
  add({"UnknownCurrentIsDone", Gpu("n"), Spec(), UpgradeState::kUpgradeDone});
  add({"UnknownOutdatedIsRequired", Outdated(Gpu("n")), Spec(), UpgradeState::kUpgradeRequired,
       Action::kNone, "driver pod driver-n is at revision old, DaemonSet gpuop-driver at new"});
  NodeSnapshot no_pod = Gpu("n");
  no_pod.driver_pod.reset();
  add({"UnknownWithoutDriverPodStays", no_pod, Spec(), UpgradeState::kUnknown});
  NodeSnapshot no_revision = Outdated(Gpu("n"));
  no_revision.update_revision.reset();
  add({"UnknownRevisionStays", no_revision, Spec(), UpgradeState::kUnknown});
  add({"DoneOutdatedIsRequired", Outdated(Gpu("n", "upgrade-done")), Spec(),
       UpgradeState::kUpgradeRequired, Action::kNone, "revision old"});
  NodeSnapshot other_pool = Gpu("n", "upgrade-done");
  other_pool.driver_daemon_set = "gpuop-driver-h100";
  add({"DoneWithAnotherPoolsPodIsRequired", other_pool, Spec(), UpgradeState::kUpgradeRequired,
       Action::kNone, "belongs to DaemonSet gpuop-driver, the node's pool uses gpuop-driver-h100"});
  add({"BogusLabelCountsAsUnknown", Outdated(Gpu("n", "half-way")), Spec(),
       UpgradeState::kUpgradeRequired, Action::kNone, "revision old"});

  // upgrade-required and cordon-required
  add({"RequiredStartsInAFreeSlot", Outdated(Gpu("n", "upgrade-required")), Spec(),
       UpgradeState::kCordonRequired});
  add({"RequiredButCurrentIsDone", Gpu("n", "upgrade-required"), Spec(),
       UpgradeState::kUpgradeDone});
  UpgradeSpec manual = Spec();
  manual.auto_upgrade = false;
  add({"RequiredWaitsWithoutAutoUpgrade", Outdated(Gpu("n", "upgrade-required")), manual,
       UpgradeState::kUpgradeRequired, Action::kNone, "spec.upgrade.autoUpgrade is false"});
  add({"CordonRequiredCordons", Outdated(Gpu("n", "cordon-required")), Spec(),
       UpgradeState::kWaitForJobsRequired, Action::kCordon});
  NodeSnapshot cordoned = Outdated(Gpu("n", "cordon-required"));
  cordoned.unschedulable = true;
  add({"CordonRequiredAlreadyCordoned", cordoned, Spec(), UpgradeState::kWaitForJobsRequired});

  // wait-for-jobs-required
  add({"NoJobSelectorGoesOn", Outdated(Gpu("n", "wait-for-jobs-required")), Spec(),
       UpgradeState::kPodDeletionRequired});
  NodeSnapshot with_jobs = Outdated(Gpu("n", "wait-for-jobs-required"));
  with_jobs.pods = {WithLabels(Pod("a"), {{"app", "train"}}),
                    WithLabels(Pod("b"), {{"app", "train"}}),
                    WithLabels(Pod("c"), {{"app", "web"}})};
  add({"WaitsForJobs", with_jobs, jobs, UpgradeState::kWaitForJobsRequired, Action::kNone,
       "waiting for 2 jobs (selector app=train): work/a, work/b"});
  NodeSnapshot jobs_done = with_jobs;
  jobs_done.pods[0].phase = "Succeeded";
  jobs_done.pods[1].phase = "Failed";
  add({"FinishedJobsDoNotCount", jobs_done, jobs, UpgradeState::kPodDeletionRequired});
  NodeSnapshot jobs_late = with_jobs;
  jobs_late.since = kNow - absl::Minutes(10);
  add({"JobTimeoutGoesOn", jobs_late, jobs, UpgradeState::kPodDeletionRequired, Action::kNone,
       "stopped waiting for 2 jobs (selector app=train) after 10m"});
  UpgradeSpec bad_selector = jobs;
  bad_selector.wait_for_jobs_selector = "app in (train";
  add({"InvalidJobSelectorWaitsAndSays", with_jobs, bad_selector,
       UpgradeState::kWaitForJobsRequired, Action::kNone,
       "spec.upgrade.waitForJobs.podSelector: \"app in (train\" is not a label selector"});
  NodeSnapshot unlisted = with_jobs;
  unlisted.pods_listed = false;
  unlisted.pods_error = "connection refused";
  add({"UnlistedPodsWait", unlisted, jobs, UpgradeState::kWaitForJobsRequired, Action::kNone,
       "listing the pods on the node: connection refused"});

  // pod-deletion-required
  NodeSnapshot gpu_pods = Outdated(Gpu("n", "pod-deletion-required"));
  PodInfo operand = GpuPod("plugin");
  operand.operand = true;
  PodInfo mirror = GpuPod("static");
  mirror.mirror = true;
  PodInfo finished = GpuPod("done");
  finished.phase = "Succeeded";
  gpu_pods.pods = {GpuPod("a"), Pod("cpu"), operand, mirror, finished, GpuPod("b")};
  add({"DeletesGpuPods",
       gpu_pods,
       Spec(),
       UpgradeState::kPodDeletionRequired,
       Action::kDeletePods,
       "deleting 2 GPU pods: work/a, work/b",
       {"a", "b"}});
  NodeSnapshot terminating = gpu_pods;
  terminating.pods[0].terminating = true;
  terminating.pods[5].terminating = true;
  add({"WaitsForGpuPodsToGo", terminating, Spec(), UpgradeState::kPodDeletionRequired,
       Action::kNone, "waiting for 2 GPU pods to terminate"});
  NodeSnapshot no_gpu_pods = Outdated(Gpu("n", "pod-deletion-required"));
  no_gpu_pods.pods = {Pod("cpu")};
  add({"NoGpuPodsRestartsTheDriver", no_gpu_pods, Spec(), UpgradeState::kPodRestartRequired});
  add({"NoGpuPodsDrainsWhenEnabled", no_gpu_pods, drain, UpgradeState::kDrainRequired});
  NodeSnapshot empty_dir = gpu_pods;
  empty_dir.unschedulable = true;
  empty_dir.pods[5].empty_dir = true;
  add({"EmptyDirRefusedFailsAndUncordons", empty_dir, Spec(), UpgradeState::kUpgradeFailed,
       Action::kUncordon,
       "GPU pod work/b uses emptyDir and spec.upgrade.podDeletion.deleteEmptyDir is false"});
  add({"EmptyDirRefusedDrainsWhenEnabled", empty_dir, drain, UpgradeState::kDrainRequired,
       Action::kNone, "uses emptyDir"});
  NodeSnapshot deletion_late = gpu_pods;
  deletion_late.since = kNow - absl::Minutes(5);
  add({"PodDeletionTimeoutFails", deletion_late, Spec(), UpgradeState::kUpgradeFailed,
       Action::kNone, "2 GPU pods still on the node after 5m: work/a, work/b"});

  // drain-required
  NodeSnapshot busy = Outdated(Gpu("n", "drain-required"));
  PodInfo ds_pod = Pod("logs");
  ds_pod.daemon_set = true;
  PodInfo skipped = WithLabels(Pod("pinned"), {{"gpuop.io/driver-upgrade-drain.skip", "true"}});
  busy.pods = {WithLabels(Pod("web"), {{"tier", "web"}}),    ds_pod, skipped, mirror, operand,
               WithLabels(Pod("batch"), {{"tier", "batch"}})};
  add({"DrainEvicts",
       busy,
       drain,
       UpgradeState::kDrainRequired,
       Action::kEvictPods,
       "evicting 2 pods: work/web, work/batch",
       {"web", "batch"}});
  add({"DrainSelectorLimitsEvictions",
       busy,
       drain_some,
       UpgradeState::kDrainRequired,
       Action::kEvictPods,
       "evicting 1 pod: work/batch",
       {"batch"}});
  NodeSnapshot drained = Outdated(Gpu("n", "drain-required"));
  drained.pods = {ds_pod, skipped, mirror, operand};
  add({"DrainedRestartsTheDriver", drained, drain, UpgradeState::kPodRestartRequired});
  NodeSnapshot blocked = busy;
  blocked.since = kNow - absl::Minutes(10);
  blocked.unschedulable = true;
  blocked.message =
      "evicting 2 pods; eviction of pod work/web is blocked by a "
      "PodDisruptionBudget: would violate web-pdb";
  add({"DrainTimeoutFailsNamingWhatIsLeft", blocked, drain, UpgradeState::kUpgradeFailed,
       Action::kUncordon,
       "drain did not finish within 10m: 2 pods left (work/web, work/batch); last: evicting 2 "
       "pods; eviction of pod work/web is blocked by a PodDisruptionBudget"});
  NodeSnapshot pre_cordoned_blocked = blocked;
  pre_cordoned_blocked.cordoned_before = true;
  add({"DrainTimeoutKeepsAPreCordonedNodeCordoned", pre_cordoned_blocked, drain,
       UpgradeState::kUpgradeFailed, Action::kNone, "drain did not finish"});
  NodeSnapshot scratch = busy;
  scratch.pods[5].empty_dir = true;
  add({"DrainRefusesEmptyDir", scratch, drain, UpgradeState::kUpgradeFailed, Action::kNone,
       "cannot drain: pod work/batch uses emptyDir and spec.upgrade.drain.deleteEmptyDir is "
       "false"});
  NodeSnapshot bare = busy;
  bare.pods[0].controlled = false;
  add({"DrainRefusesBarePods", bare, drain, UpgradeState::kUpgradeFailed, Action::kNone,
       "cannot drain: pod work/web has no controller and spec.upgrade.drain.force is false"});
  add({"ForcedDrainEvictsBarePods",
       bare,
       force_drain,
       UpgradeState::kDrainRequired,
       Action::kEvictPods,
       "evicting 2 pods",
       {"web", "batch"}});

  // pod-restart-required
  add({"RestartDeletesTheOutdatedDriverPod",
       Outdated(Gpu("n", "pod-restart-required")),
       Spec(),
       UpgradeState::kPodRestartRequired,
       Action::kDeleteDriverPod,
       "deleting driver pod driver-n",
       {"driver-n"}});
  add({"RestartedDriverReadyGoesToValidation", Gpu("n", "pod-restart-required"), Spec(),
       UpgradeState::kValidationRequired});
  NodeSnapshot starting = Gpu("n", "pod-restart-required");
  starting.driver_pod->ready = false;
  add({"RestartWaitsForReady", starting, Spec(), UpgradeState::kPodRestartRequired, Action::kNone,
       "waiting for driver pod driver-n to be Ready"});
  NodeSnapshot gone = Gpu("n", "pod-restart-required");
  gone.driver_pod.reset();
  add({"RestartWaitsForThePod", gone, Spec(), UpgradeState::kPodRestartRequired, Action::kNone,
       "waiting for DaemonSet gpuop-driver to create the driver pod"});
  NodeSnapshot crashing = starting;
  crashing.unschedulable = true;
  crashing.driver_pod->restarts = 11;
  add({"CrashLoopFailsAndStaysCordoned", crashing, Spec(), UpgradeState::kUpgradeFailed,
       Action::kNone, "driver pod driver-n restarted 11 times without becoming Ready"});
  NodeSnapshot slow = starting;
  slow.since = kNow - absl::Minutes(15);
  add({"RestartTimeoutFails", slow, Spec(), UpgradeState::kUpgradeFailed, Action::kNone,
       "the driver was not Ready within 15m: waiting for driver pod driver-n to be Ready"});

  // validation-required, uncordon-required
  add({"ValidatedGoesToUncordon", Gpu("n", "validation-required"), Spec(),
       UpgradeState::kUncordonRequired});
  NodeSnapshot validating = Gpu("n", "validation-required");
  validating.validator_ready = false;
  add({"WaitsForTheValidator", validating, Spec(), UpgradeState::kValidationRequired, Action::kNone,
       "waiting for the validator pod on the node to be Ready"});
  add({"NoValidatorNeededWhenDisabled",
       validating,
       Spec(),
       UpgradeState::kUncordonRequired,
       Action::kNone,
       "",
       {},
       /*validation=*/false});
  NodeSnapshot invalid = validating;
  invalid.since = kNow - absl::Minutes(10);
  add({"ValidationTimeoutFails", invalid, Spec(), UpgradeState::kUpgradeFailed, Action::kNone,
       "validation did not pass within 10m"});
  NodeSnapshot to_uncordon = Gpu("n", "uncordon-required");
  to_uncordon.unschedulable = true;
  add({"Uncordons", to_uncordon, Spec(), UpgradeState::kUpgradeDone, Action::kUncordon});
  NodeSnapshot was_cordoned = to_uncordon;
  was_cordoned.cordoned_before = true;
  add({"PreCordonedStaysCordoned", was_cordoned, Spec(), UpgradeState::kUpgradeDone, Action::kNone,
       "left cordoned: it was cordoned before the upgrade"});

  // upgrade-failed
  NodeSnapshot failed = Gpu("n", "upgrade-failed");
  failed.unschedulable = true;
  failed.message = "driver pod restarted 11 times";
  add({"FailedRecoversWhenCurrentReadyAndValidated", failed, Spec(), UpgradeState::kUpgradeDone,
       Action::kUncordon, "recovered: driver pod driver-n is current and Ready"});
  NodeSnapshot failed_before = failed;
  failed_before.cordoned_before = true;
  add({"FailedPreCordonedRecoversCordoned", failed_before, Spec(), UpgradeState::kUpgradeDone,
       Action::kNone, "recovered"});
  NodeSnapshot failed_unvalidated = failed;
  failed_unvalidated.validator_ready = false;
  add({"FailedWaitsForValidation", failed_unvalidated, Spec(), UpgradeState::kUpgradeFailed,
       Action::kNone, "driver pod restarted 11 times"});
  add({"FailedOutdatedStaysFailed", Outdated(failed), Spec(), UpgradeState::kUpgradeFailed,
       Action::kNone, "driver pod restarted 11 times"});
  return cases;
}

class PlanRuleTest : public ::testing::TestWithParam<Case> {};

TEST_P(PlanRuleTest, PlansTheRule) {
  const Case& c = GetParam();
  const NodePlan p = PlanOne(c.node, c.spec, c.validation);
  EXPECT_EQ(p.to, c.to);
  EXPECT_EQ(ActionName(p.action), std::string(ActionName(c.action)));
  if (c.message.empty()) {
    EXPECT_THAT(p.message, IsEmpty());
  } else {
    EXPECT_THAT(p.message, HasSubstr(c.message));
  }
  EXPECT_EQ(PodNames(p), c.pods);
}

INSTANTIATE_TEST_SUITE_P(Rules, PlanRuleTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& p) { return p.param.name; });

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
