#include "operator/upgrade/executor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kube/events/fake_event_sink.h"
#include "operator/upgrade/fake_api_test_util.h"

namespace gpuop::op::upgrade {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::ScriptedApi;

const absl::Time kNow = absl::FromUnixSeconds(1'700'000'000);
constexpr char kNodePatch[] = "/api/v1/nodes/n?fieldManager=gpuop-operator";

class ExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = testing::ClientFor(api_);
    ASSERT_NE(client_, nullptr);
    auto recorder = kube::EventRecorder::Create(sink_, {.reporting_instance = "test"});
    ASSERT_TRUE(recorder.ok()) << recorder.status();
    recorder_ = *std::move(recorder);
    executor_ = std::make_unique<Executor>(*client_, recorder_.get());
  }

  ExecuteResult Run(const NodePlan& plan) {
    absl::StatusOr<ExecuteResult> result = executor_->Execute(plan, kNow);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : ExecuteResult{};
  }
  // The Events written, as "type reason note".
  std::vector<std::string> Events() {
    recorder_->Stop();
    std::vector<std::string> out;
    for (const kube::Json& e : sink_.Events()) {
      EXPECT_EQ(e["regarding"]["kind"], "Node");
      EXPECT_EQ(e["regarding"]["name"], "n");
      out.push_back(absl::StrCat(e["type"].get<std::string>(), " ", e["reason"].get<std::string>(),
                                 " ", e["note"].get<std::string>()));
    }
    return out;
  }

  std::shared_ptr<ScriptedApi> api_ = std::make_shared<ScriptedApi>();
  std::unique_ptr<kube::Client> client_;
  kube::FakeEventSink sink_;
  std::unique_ptr<kube::EventRecorder> recorder_;
  std::unique_ptr<Executor> executor_;
};

NodePlan Transition(UpgradeState from, UpgradeState to) {
  return NodePlan{.node = "n", .node_uid = "uid-n", .from = from, .to = to};
}

TEST_F(ExecutorTest, ATransitionIsOneMergePatchWithCordonAndAnEvent) {
  NodePlan plan = Transition(UpgradeState::kCordonRequired, UpgradeState::kWaitForJobsRequired);
  plan.action = Action::kCordon;
  plan.current_message = "old news";
  api_->Answer("PATCH", "/nodes/n", 200, {{"metadata", {{"resourceVersion", "42"}}}});
  const ExecuteResult result = Run(plan);
  EXPECT_TRUE(result.patched);
  EXPECT_EQ(result.resource_version, "42");
  const std::vector<testing::Request> writes = api_->writes();
  ASSERT_EQ(writes.size(), 1u);
  const testing::Request& patch = writes[0];
  EXPECT_EQ(patch.method, "PATCH");
  EXPECT_EQ(patch.path, kNodePatch);
  EXPECT_EQ(patch.Json(), kube::Json::parse(R"({
      "metadata": {
        "labels": {"gpuop.io/driver-upgrade-state": "wait-for-jobs-required"},
        "annotations": {"gpuop.io/driver-upgrade-since": "2023-11-14T22:13:20Z",
                        "gpuop.io/driver-upgrade-message": null}},
      "spec": {"unschedulable": true}})"));
  EXPECT_THAT(Events(), ElementsAre("Normal WaitForJobsRequired driver upgrade: cordon-required "
                                    "-> wait-for-jobs-required"));
}

TEST_F(ExecutorTest, StartingRecordsWhetherTheNodeWasCordoned) {
  NodePlan plan = Transition(UpgradeState::kUpgradeRequired, UpgradeState::kCordonRequired);
  plan.set_cordoned_before = true;
  Run(plan);
  ASSERT_EQ(api_->writes().size(), 1u);
  EXPECT_EQ(api_->writes()[0].Json()["metadata"]["annotations"]["gpuop.io/cordoned-before"],
            "true");
  EXPECT_FALSE(api_->writes()[0].Json().contains("spec"));
}

TEST_F(ExecutorTest, FinishingUncordonsAndForgetsThePreviousCordon) {
  NodePlan plan = Transition(UpgradeState::kUncordonRequired, UpgradeState::kUpgradeDone);
  plan.action = Action::kUncordon;
  plan.set_cordoned_before = false;
  Run(plan);
  ASSERT_EQ(api_->writes().size(), 1u);
  const kube::Json body = api_->writes()[0].Json();
  EXPECT_EQ(body["spec"]["unschedulable"], false);
  EXPECT_TRUE(body["metadata"]["annotations"]["gpuop.io/cordoned-before"].is_null());
  EXPECT_EQ(body["metadata"]["labels"]["gpuop.io/driver-upgrade-state"], "upgrade-done");
}

TEST_F(ExecutorTest, AFailureIsAWarningWithTheReason) {
  NodePlan plan = Transition(UpgradeState::kDrainRequired, UpgradeState::kUpgradeFailed);
  plan.message = "drain did not finish within 10m";
  Run(plan);
  ASSERT_EQ(api_->writes().size(), 1u);
  EXPECT_EQ(api_->writes()[0].Json()["metadata"]["annotations"]["gpuop.io/driver-upgrade-message"],
            "drain did not finish within 10m");
  EXPECT_THAT(Events(), ElementsAre("Warning UpgradeFailed driver upgrade: drain-required -> "
                                    "upgrade-failed: drain did not finish within 10m"));
}

TEST_F(ExecutorTest, DeletesPodsWithTheirUidAndGrace) {
  NodePlan plan =
      Transition(UpgradeState::kPodDeletionRequired, UpgradeState::kPodDeletionRequired);
  plan.action = Action::kDeletePods;
  plan.pods = {{"work", "a", "uid-a"}, {"work", "b", "uid-b"}};
  plan.grace_seconds = 0;
  plan.message = "deleting 2 GPU pods: work/a, work/b";
  plan.current_message = plan.message;
  api_->Answer("DELETE", "/pods/b", 404, testing::StatusBody(404, "NotFound", "gone"));
  const ExecuteResult result = Run(plan);
  EXPECT_THAT(result.problems, IsEmpty());  // b was gone already: fine
  EXPECT_FALSE(result.patched);             // nothing changed on the Node
  const auto writes = api_->writes();
  ASSERT_EQ(writes.size(), 2u);
  EXPECT_EQ(writes[0].method, "DELETE");
  EXPECT_EQ(writes[0].path, "/api/v1/namespaces/work/pods/a");
  EXPECT_EQ(writes[0].Json()["preconditions"]["uid"], "uid-a");
  EXPECT_EQ(writes[0].Json()["gracePeriodSeconds"], 0);
  EXPECT_EQ(writes[1].path, "/api/v1/namespaces/work/pods/b");
  EXPECT_THAT(Events(), IsEmpty());
}

TEST_F(ExecutorTest, ABlockedEvictionIsExplainedOnceOnTheNode) {
  NodePlan plan = Transition(UpgradeState::kDrainRequired, UpgradeState::kDrainRequired);
  plan.action = Action::kEvictPods;
  plan.pods = {{"work", "web", "uid-web"}};
  plan.message = "evicting 1 pod: work/web";
  api_->Answer("POST", "/pods/web/eviction", 429,
               testing::StatusBody(429, "TooManyRequests",
                                   "Cannot evict pod as it would violate the pod's disruption "
                                   "budget."));
  ExecuteResult result = Run(plan);
  ASSERT_EQ(result.problems.size(), 1u);
  EXPECT_THAT(result.problems[0],
              HasSubstr("eviction of pod work/web is blocked by a PodDisruptionBudget: "));
  EXPECT_THAT(result.problems[0], HasSubstr("would violate the pod's disruption budget"));
  auto writes = api_->writes();
  ASSERT_EQ(writes.size(), 2u);
  EXPECT_EQ(writes[0].path, "/api/v1/namespaces/work/pods/web/eviction");
  EXPECT_EQ(writes[0].Json()["deleteOptions"]["preconditions"]["uid"], "uid-web");
  const std::string message =
      writes[1].Json()["metadata"]["annotations"]["gpuop.io/driver-upgrade-message"];
  EXPECT_EQ(message, "evicting 1 pod: work/web; " + result.problems[0]);

  // The next pass finds that message on the Node: it retries the eviction, writes nothing.
  plan.current_message = message;
  result = Run(plan);
  EXPECT_FALSE(result.patched);
  writes = api_->writes();
  ASSERT_EQ(writes.size(), 3u);
  EXPECT_EQ(writes[2].method, "POST");
}

TEST_F(ExecutorTest, DeletesTheDriverPodWithoutPrecondition) {
  NodePlan plan = Transition(UpgradeState::kPodRestartRequired, UpgradeState::kPodRestartRequired);
  plan.action = Action::kDeleteDriverPod;
  plan.pods = {{"gpuop-system", "gpuop-driver-x1", ""}};
  plan.stamp_since = true;
  Run(plan);
  const auto writes = api_->writes();
  ASSERT_EQ(writes.size(), 2u);
  EXPECT_EQ(writes[0].path, "/api/v1/namespaces/gpuop-system/pods/gpuop-driver-x1");
  EXPECT_FALSE(writes[0].Json().contains("preconditions"));
  EXPECT_EQ(writes[1].Json(), kube::Json::parse(R"({"metadata": {"annotations": {
      "gpuop.io/driver-upgrade-since": "2023-11-14T22:13:20Z"}}})"));
}

TEST_F(ExecutorTest, AFailedPodActionIsReportedAndRetriedLater) {
  NodePlan plan =
      Transition(UpgradeState::kPodDeletionRequired, UpgradeState::kPodDeletionRequired);
  plan.action = Action::kDeletePods;
  plan.pods = {{"work", "a", "uid-a"}};
  plan.message = "deleting 1 GPU pod: work/a";
  plan.current_message = plan.message;
  api_->Answer("DELETE", "/pods/a", 403, testing::StatusBody(403, "Forbidden", "no"));
  const ExecuteResult result = Run(plan);
  ASSERT_EQ(result.problems.size(), 1u);
  EXPECT_THAT(result.problems[0], HasSubstr("deleting pod work/a failed: "));
  EXPECT_TRUE(result.patched);
}

TEST_F(ExecutorTest, NothingToDoWritesNothing) {
  NodePlan plan = Transition(UpgradeState::kValidationRequired, UpgradeState::kValidationRequired);
  plan.message = plan.current_message = "waiting for the validator pod on the node to be Ready";
  const ExecuteResult result = Run(plan);
  EXPECT_FALSE(result.patched);
  EXPECT_THAT(api_->requests(), IsEmpty());
}

TEST_F(ExecutorTest, ExcludedNodesAreNeverWritten) {
  NodePlan plan = Transition(UpgradeState::kUpgradeDone, UpgradeState::kUpgradeRequired);
  plan.excluded = true;
  Run(plan);
  EXPECT_THAT(api_->requests(), IsEmpty());
}

TEST_F(ExecutorTest, ANodePatchErrorIsReturned) {
  api_->Answer("PATCH", "/nodes/n", 409, testing::StatusBody(409, "Conflict", "try again"));
  absl::StatusOr<ExecuteResult> result = executor_->Execute(
      Transition(UpgradeState::kUpgradeRequired, UpgradeState::kCordonRequired), kNow);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(Events(), IsEmpty());
}

}  // namespace
}  // namespace gpuop::op::upgrade
