// The planner, one rule per row.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "operator/upgrade/planner.h"
#include "operator/upgrade/planner_test_util.h"

namespace gpuop::op::upgrade {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using namespace ::gpuop::op::upgrade::testing;  // NOLINT: the planner's test vocabulary

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

}  // namespace
}  // namespace gpuop::op::upgrade
