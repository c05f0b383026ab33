#include "operator/remediation/planner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuop::op::remediation {
namespace {

using ::testing::HasSubstr;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

NodeState Unhealthy(const std::string& name) {
  return {.name = name, .healthy = false, .health_message = "GPU 3: XID 79", .ready = true};
}

RemediationSpec Spec() {
  RemediationSpec spec;
  spec.max_parallel = 1;
  spec.max_attempts = 2;
  spec.window = absl::Hours(24);
  spec.step_timeout = absl::Minutes(15);
  return spec;
}

std::optional<NodePlan> For(const Plan& plan, const std::string& node) {
  for (const NodePlan& p : plan.nodes) {
    if (p.node == node) return p;
  }
  return std::nullopt;
}

TEST(RemediationPlannerTest, AnUnhealthyNodeStartsAndIsTaintedThenDrained) {
  NodeState n = Unhealthy("a");
  n.pods_listed = true;
  n.pods = {{.ns = "ml", .name = "train", .uid = "u1", .phase = "Running"},
            {.ns = "gpuop-system",
             .name = "gpuop-exporter-x",
             .phase = "Running",
             .daemon_set = true,
             .operand = true}};
  const Plan plan = PlanRemediation({n}, Spec(), true, kNow);
  std::optional<NodePlan> p = For(plan, "a");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->state, kInProgress);
  EXPECT_EQ(p->record_attempt, kNow);
  // Taint happens in this pass (the taint) and the plan moves on to Drain at once.
  EXPECT_EQ(p->step, "Drain");
  EXPECT_EQ(p->pod_action, PodAction::kEvict);
  EXPECT_TRUE(p->taint) << "tainted in the same pass";
  ASSERT_EQ(p->pods.size(), 1u) << "DaemonSet and gpuop pods are not evicted";
  EXPECT_EQ(p->pods[0].name, "train");
  EXPECT_EQ(plan.in_progress, 1);
}

TEST(RemediationPlannerTest, FirstPassOfATaintlessNodeTaints) {
  NodeState n = Unhealthy("a");  // pods not listed yet: the Drain step waits for them
  std::optional<NodePlan> p = For(PlanRemediation({n}, Spec(), true, kNow), "a");
  ASSERT_TRUE(p.has_value());
  EXPECT_TRUE(p->taint);
  EXPECT_EQ(p->step, "Drain");
  EXPECT_THAT(p->message, HasSubstr("listing the pods"));
}

TEST(RemediationPlannerTest, MaxParallelHoldsTheOthersPendingWithAReason) {
  NodeState busy = Unhealthy("a");
  busy.state = kInProgress;
  busy.step = "Validate";
  busy.since = kNow - absl::Minutes(1);
  busy.tainted = true;
  const Plan plan = PlanRemediation({busy, Unhealthy("b")}, Spec(), true, kNow);
  std::optional<NodePlan> b = For(plan, "b");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->state, kPending);
  EXPECT_THAT(b->message, HasSubstr("maxParallel 1"));
  EXPECT_FALSE(b->taint);
}

// Node "a" in the RestartDriver step, begun 30 s ago, with its driver pod from before the step.
NodeState RestartingDriver() {
  NodeState n = Unhealthy("a");
  n.state = kInProgress;
  n.step = "RestartDriver";
  n.since = kNow - absl::Seconds(30);
  n.tainted = true;
  n.driver_pod = NodeState::DriverPod{.ns = "gpuop-system",
                                      .name = "gpuop-driver-old",
                                      .ready = true,
                                      .created = kNow - absl::Hours(5)};
  return n;
}

TEST(RemediationPlannerTest, RestartDriverDeletesTheOldPodAndWaitsForTheNewOne) {
  NodeState n = RestartingDriver();
  std::optional<NodePlan> p = For(PlanRemediation({n}, Spec(), true, kNow), "a");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->pod_action, PodAction::kDeleteDriverPod);
  EXPECT_EQ(p->pods[0].name, "gpuop-driver-old");

  n.driver_pod = NodeState::DriverPod{.ns = "gpuop-system",
                                      .name = "gpuop-driver-new",
                                      .ready = true,
                                      .created = kNow - absl::Seconds(5)};
  p = For(PlanRemediation({n}, Spec(), true, kNow), "a");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->step, "Validate") << "a Ready replacement moves on";
}

TEST(RemediationPlannerTest, RestartDriverPausesTheClientsFirstAndResumesThemAfter) {
  NodeState n = RestartingDriver();
  n.clients.to_pause = {"gpuop.io/deploy.exporter"};
  n.clients.running = {"gpuop-exporter-x"};
  std::optional<NodePlan> p = For(PlanRemediation({n}, Spec(), true, kNow), "a");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->pod_action, PodAction::kNone);
  EXPECT_THAT(p->set_labels, ::testing::ElementsAre(::testing::Pair("gpuop.io/deploy.exporter",
                                                                    "paused-for-driver-upgrade")));

  n.clients.paused = n.clients.to_pause;
  n.clients.to_pause.clear();
  p = For(PlanRemediation({n}, Spec(), true, kNow), "a");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->pod_action, PodAction::kNone) << "the exporter pod is still there";
  EXPECT_THAT(p->message, HasSubstr("GPU client pods to stop"));
  EXPECT_TRUE(p->set_labels.empty()) << "a restart in progress keeps its pause";

  n.clients.running.clear();
  p = For(PlanRemediation({n}, Spec(), true, kNow), "a");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->pod_action, PodAction::kDeleteDriverPod);

  n.driver_pod->created = kNow - absl::Seconds(5);  // the replacement, Ready
  p = For(PlanRemediation({n}, Spec(), true, kNow), "a");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->step, "Validate");
  EXPECT_THAT(p->set_labels,
              ::testing::ElementsAre(::testing::Pair("gpuop.io/deploy.exporter", "true")));
}

TEST(RemediationPlannerTest, ARestartedDriverThatWaitsForASafeLoadIsLetIn) {
  NodeState n = RestartingDriver();
  n.driver_pod->created = kNow - absl::Seconds(5);  // the replacement
  n.driver_pod->ready = false;
  n.driver_pod->waits_for_safe_load = true;  // the old driver did not unload
  n.clients.paused = {"gpuop.io/deploy.exporter"};
  std::optional<NodePlan> p = For(PlanRemediation({n}, Spec(), true, kNow), "a");
  ASSERT_TRUE(p.has_value());
  EXPECT_TRUE(p->release_safe_load) << "the node is tainted, drained and its clients paused";
  EXPECT_EQ(p->step, "RestartDriver");
  EXPECT_THAT(p->message, HasSubstr("it waited for the node to be safe"));
  EXPECT_TRUE(p->set_labels.empty()) << "the clients stay paused until the driver is Ready";
}

TEST(RemediationPlannerTest, APauseOfTheUpgradesIsNotLifted) {
  NodeState n{.name = "a", .healthy = true, .ready = true};
  n.clients.paused = {"gpuop.io/deploy.exporter"};
  n.upgrade_restarting_driver = true;
  EXPECT_FALSE(For(PlanRemediation({n}, Spec(), true, kNow), "a").has_value());
  n.upgrade_restarting_driver = false;  // a pause nobody holds any more
  std::optional<NodePlan> p = For(PlanRemediation({n}, Spec(), true, kNow), "a");
  ASSERT_TRUE(p.has_value());
  EXPECT_THAT(p->set_labels,
              ::testing::ElementsAre(::testing::Pair("gpuop.io/deploy.exporter", "true")));
}

TEST(RemediationPlannerTest, ValidateThenUntaintReturnsTheNodeToService) {
  NodeState n = Unhealthy("a");
  n.state = kInProgress;
  n.step = "Validate";
  n.since = kNow - absl::Minutes(2);
  n.tainted = true;
  std::optional<NodePlan> waiting = For(PlanRemediation({n}, Spec(), true, kNow), "a");
  ASSERT_TRUE(waiting.has_value());
  EXPECT_THAT(waiting->message, HasSubstr("waiting for the GPUs to be healthy (GPU 3: XID 79)"));

  n.healthy = true;
  n.validator_ready = true;
  std::optional<NodePlan> p = For(PlanRemediation({n}, Spec(), true, kNow), "a");
  ASSERT_TRUE(p.has_value());
  EXPECT_TRUE(p->untaint);
  EXPECT_EQ(p->state, kDone);
}

TEST(RemediationPlannerTest, AStepPastItsTimeoutFailsAndKeepsTheTaint) {
  NodeState n = Unhealthy("a");
  n.state = kInProgress;
  n.step = "Validate";
  n.since = kNow - absl::Minutes(16);
  n.tainted = true;
  const Plan plan = PlanRemediation({n}, Spec(), true, kNow);
  std::optional<NodePlan> p = For(plan, "a");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->state, kFailed);
  EXPECT_FALSE(p->untaint);
  EXPECT_THAT(p->message, HasSubstr("Validate did not finish within 15m"));
  EXPECT_EQ(plan.in_progress, 0) << "a failed node holds no slot";
}

TEST(RemediationPlannerTest, TooManyAttemptsInTheWindowIsExhausted) {
  NodeState n = Unhealthy("a");
  n.state = kDone;
  n.attempts = {kNow - absl::Hours(3), kNow - absl::Hours(1)};
  std::optional<NodePlan> p = For(PlanRemediation({n}, Spec(), true, kNow), "a");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->state, kExhausted);
  EXPECT_TRUE(p->taint);
  EXPECT_THAT(p->message, HasSubstr("2 remediations within 24h"));

  // Attempts older than the window do not count.
  n.attempts = {kNow - absl::Hours(30), kNow - absl::Hours(1)};
  p = For(PlanRemediation({n}, Spec(), true, kNow), "a");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->state, kInProgress);
  EXPECT_EQ(p->attempts.size(), 2u);
}

TEST(RemediationPlannerTest, AFailedNodeThatRecoversReturnsToService) {
  NodeState n = {.name = "a",
                 .state = kFailed,
                 .healthy = true,
                 .ready = true,
                 .tainted = true,
                 .validator_ready = true};
  std::optional<NodePlan> p = For(PlanRemediation({n}, Spec(), true, kNow), "a");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->state, kDone);
  EXPECT_TRUE(p->untaint);
}

TEST(RemediationPlannerTest, ANodeInADriverUpgradeWaits) {
  NodeState n = Unhealthy("a");
  n.upgrading = true;
  std::optional<NodePlan> p = For(PlanRemediation({n}, Spec(), true, kNow), "a");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->state, kPending);
  EXPECT_THAT(p->message, HasSubstr("driver upgrade"));
}

TEST(RemediationPlannerTest, RebootIsRequestedAndAwaited) {
  RemediationSpec spec = Spec();
  spec.steps = {RemediationStep::kTaint, RemediationStep::kRequestReboot,
                RemediationStep::kValidate, RemediationStep::kUntaint};
  NodeState n = Unhealthy("a");
  n.state = kInProgress;
  n.step = "Taint";
  n.since = kNow;
  n.tainted = true;
  std::optional<NodePlan> p = For(PlanRemediation({n}, spec, true, kNow), "a");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->step, "RequestReboot");
  EXPECT_TRUE(p->request_reboot);

  n.step = "RequestReboot";
  n.since = kNow - absl::Minutes(1);
  n.reboot_requested = true;
  p = For(PlanRemediation({n}, spec, true, kNow), "a");
  ASSERT_TRUE(p.has_value());
  EXPECT_THAT(p->message, HasSubstr("waiting for the reboot"));
  n.reboot_requested = false;
  p = For(PlanRemediation({n}, spec, true, kNow), "a");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->step, "Validate");
}

TEST(RemediationPlannerTest, SamePlanForTheSameInputs) {
  NodeState a = Unhealthy("a"), b = Unhealthy("b");
  const Plan first = PlanRemediation({b, a}, Spec(), true, kNow);
  const Plan second = PlanRemediation({a, b}, Spec(), true, kNow);
  ASSERT_EQ(first.nodes.size(), second.nodes.size());
  for (size_t i = 0; i < first.nodes.size(); ++i) {
    EXPECT_EQ(first.nodes[i].node, second.nodes[i].node);
    EXPECT_EQ(first.nodes[i].state, second.nodes[i].state);
  }
  EXPECT_EQ(For(first, "a")->state, kInProgress) << "name order decides who starts";
}

}  // namespace
}  // namespace gpuop::op::remediation
