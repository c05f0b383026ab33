// The health monitor's publisher against the real API server: the GPUHealthy Node condition and
// an Event per transition, and nothing lost across a network partition.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "agent/health/node_publisher.h"
#include "kube/client/resource.h"
#include "kube/types/node.h"
#include "test/fakes/node_objects.h"
#include "test/integration/kube_test_util.h"
#include "test/integration/network_partition.h"

namespace gpuop::test {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;
namespace resources = kube::resources;
constexpr absl::Duration kWait = absl::Seconds(30);

agent::DeviceHealth Gpu(int index, std::optional<agent::Unhealthy> problem = std::nullopt) {
  return {.gpu_index = index,
          .gpu_uuid = absl::StrCat("GPU-", index, "0000000-1111-2222-3333-444444444444"),
          .pci_bus_id = absl::StrCat("0000:", 10 + index, ":00.0"),
          .problem = std::move(problem)};
}

agent::HealthReport Report(absl::Time at, std::vector<agent::DeviceHealth> devices) {
  return {.time = at, .devices = std::move(devices)};
}

// Whole seconds: what the API server keeps of a timestamp.
absl::Time Seconds(absl::Time t) { return absl::FromUnixSeconds(absl::ToUnixSeconds(t)); }

class AgentHealthIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    admin_ = AdminClient();
    ASSERT_NE(admin_, nullptr);
    node_ = UniqueName("health-node");
    ASSERT_TRUE(admin_->Create(resources::kNodes, "", fakes::KwokGpuNode(node_, 8)).ok());
    client_ = PartitionableAdminClient(partition_);
    ASSERT_NE(client_, nullptr);
    sink_ = std::make_unique<kube::ClientEventSink>(*client_);
  }
  void TearDown() override { (void)admin_->Delete(resources::kNodes, "", node_); }

  std::unique_ptr<agent::NodeHealthPublisher> MakePublisher() {
    auto publisher = std::make_unique<agent::NodeHealthPublisher>(
        *client_, *sink_,
        agent::NodeHealthPublisherOptions{
            .node_name = node_,
            .reporting_instance = "gpuop-health-test",
            .retry = {.base = absl::Milliseconds(20), .cap = absl::Milliseconds(200)}});
    publisher->Start();
    return publisher;
  }

  kube::Condition GpuHealthy() {
    auto node = admin_->Get(resources::kNodes, "", node_);
    EXPECT_TRUE(node.ok()) << node.status();
    if (!node.ok()) return {};
    auto parsed = kube::ParseNode(*node);
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    const kube::Condition* c = kube::FindCondition(parsed->conditions, "GPUHealthy");
    return c == nullptr ? kube::Condition{} : *c;
  }

  // This node's Events from the health monitor, oldest first.
  std::vector<kube::Json> Events() {
    auto list = admin_->ListAll(resources::kEventsV1, "default");
    EXPECT_TRUE(list.ok()) << list.status();
    std::vector<kube::Json> out;
    if (!list.ok()) return out;
    for (auto& e : list->items) {
      if (e["regarding"].value("name", "") == node_ &&
          e.value("reportingController", "") == "gpuop.io/health-monitor") {
        out.push_back(std::move(e));
      }
    }
    std::sort(out.begin(), out.end(), [](const kube::Json& a, const kube::Json& b) {
      return a.value("eventTime", "") < b.value("eventTime", "");
    });
    return out;
  }

  std::unique_ptr<kube::Client> admin_;
  std::shared_ptr<PartitionableHttpClient> partition_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<kube::ClientEventSink> sink_;
  std::string node_;
};

TEST_F(AgentHealthIntegrationTest, PublishesTheConditionAndAnEventPerTransition) {
  auto publisher = MakePublisher();
  const absl::Time t0 = absl::Now();
  const agent::HealthReport healthy = Report(t0, {Gpu(0), Gpu(1)});
  publisher->Update(healthy, {});
  ASSERT_TRUE(publisher->WaitUntilPublished(kWait));
  kube::Condition c = GpuHealthy();
  EXPECT_EQ(c.status, "True");
  EXPECT_EQ(c.reason, "AllGPUsHealthy");
  EXPECT_EQ(c.message, "2 GPUs healthy");

  const agent::HealthReport sick = Report(
      t0 + absl::Seconds(3), {Gpu(0), Gpu(1, agent::Unhealthy{.code = "XidError",
                                                              .reason = "XID 79",
                                                              .since = t0 + absl::Seconds(2)})});
  publisher->Update(sick, agent::Diff(healthy, sick));
  ASSERT_TRUE(publisher->WaitUntilPublished(kWait));
  c = GpuHealthy();
  EXPECT_EQ(c.status, "False");
  EXPECT_EQ(c.reason, "XidError");
  EXPECT_THAT(c.message, HasSubstr("GPU 1 (GPU-10000000-111..., 0000:11:00.0): XID 79"));
  EXPECT_EQ(c.last_transition_time, Seconds(t0 + absl::Seconds(3)));

  std::vector<kube::Json> events = Events();
  ASSERT_THAT(events, SizeIs(1));
  EXPECT_EQ(events[0]["type"], "Warning");
  EXPECT_EQ(events[0]["reason"], "GPUUnhealthy");
  EXPECT_EQ(events[0]["regarding"]["kind"], "Node");
  EXPECT_FALSE(events[0]["regarding"].value("uid", "").empty());
  EXPECT_THAT(events[0].value("note", ""), HasSubstr("GPU 1"));
  EXPECT_EQ(publisher->stats().events_written, 1);
}

// GPUHealthy and GPURecoveryAction say one thing together: every status patch carries both, so
// no reader (the operator's remediation) ever sees a GPU healthy again while the Node still
// asks for its reset, or the other way round.
TEST_F(AgentHealthIntegrationTest, TheHealthAndTheRecoveryActionChangeInOnePatch) {
  auto publisher = MakePublisher();
  const absl::Time t0 = absl::Now();
  const agent::HealthReport healthy = Report(t0, {Gpu(0), Gpu(1)});
  const agent::HealthReport sick =
      Report(t0 + absl::Seconds(1),
             {Gpu(0), Gpu(1, agent::Unhealthy{.code = "XidError",
                                              .reason = "XID 48",
                                              .since = t0,
                                              .action = agent::XidAction::kResetGpu})});
  for (const agent::HealthReport* report : {&healthy, &sick, &healthy}) {
    publisher->Update(*report, {});
    ASSERT_TRUE(publisher->WaitUntilPublished(kWait));
    auto node = admin_->Get(resources::kNodes, "", node_);
    ASSERT_TRUE(node.ok()) << node.status();
    auto parsed = kube::ParseNode(*node);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    const kube::Condition* health = kube::FindCondition(parsed->conditions, "GPUHealthy");
    const kube::Condition* action = kube::FindCondition(parsed->conditions, "GPURecoveryAction");
    ASSERT_NE(health, nullptr);
    ASSERT_NE(action, nullptr);
    EXPECT_EQ(health->status == "False", action->status == "True") << health->message;
    if (action->status == "True") {
      EXPECT_EQ(action->reason, "ResetGpu");
    }
  }
  int status_patches = 0;
  for (const std::string& body : partition_->patches()) {
    if (!absl::StrContains(body, "GPUHealthy") && !absl::StrContains(body, "GPURecoveryAction")) {
      continue;
    }
    ++status_patches;
    EXPECT_THAT(body, HasSubstr("GPUHealthy"));
    EXPECT_THAT(body, HasSubstr("GPURecoveryAction"));
  }
  EXPECT_EQ(status_patches, 3) << "one patch per change";
}

TEST_F(AgentHealthIntegrationTest, NothingIsLostWhileTheApiServerIsUnreachable) {
  auto publisher = MakePublisher();
  const absl::Time t0 = absl::Now() - absl::Minutes(10);
  const agent::HealthReport healthy = Report(t0, {Gpu(0), Gpu(1), Gpu(2)});
  publisher->Update(healthy, {});
  ASSERT_TRUE(publisher->WaitUntilPublished(kWait));

  partition_->Cut();
  // While cut off: GPU 2 fails, GPU 0 fails for another reason, GPU 2 recovers.
  const agent::Unhealthy xid{
      .code = "XidError", .reason = "XID 48", .since = t0 + absl::Minutes(1)};
  const agent::Unhealthy lost{
      .code = "GpuLost", .reason = "GPU lost", .since = t0 + absl::Minutes(2)};
  const agent::HealthReport r1 = Report(t0 + absl::Minutes(1), {Gpu(0), Gpu(1), Gpu(2, xid)});
  const agent::HealthReport r2 = Report(t0 + absl::Minutes(2), {Gpu(0, lost), Gpu(1), Gpu(2, xid)});
  const agent::HealthReport r3 = Report(t0 + absl::Minutes(3), {Gpu(0, lost), Gpu(1), Gpu(2)});
  publisher->Update(r1, agent::Diff(healthy, r1));
  publisher->Update(r2, agent::Diff(r1, r2));
  publisher->Update(r3, agent::Diff(r2, r3));
  const absl::Time deadline = absl::Now() + kWait;
  while (partition_->refused() < 3 && absl::Now() < deadline)
    absl::SleepFor(absl::Milliseconds(10));
  ASSERT_GE(partition_->refused(), 3) << "the publisher keeps trying";
  EXPECT_EQ(publisher->stats().events_pending, 3u);
  EXPECT_TRUE(publisher->stats().condition_pending);
  EXPECT_EQ(GpuHealthy().status, "True") << "the API server has heard nothing yet";

  partition_->Heal();
  ASSERT_TRUE(publisher->WaitUntilPublished(kWait));
  const kube::Condition c = GpuHealthy();
  EXPECT_EQ(c.status, "False");
  EXPECT_EQ(c.reason, "GpuLost");
  // When it happened on the node, not when the API server heard of it.
  EXPECT_EQ(c.last_transition_time, Seconds(t0 + absl::Minutes(1)));

  std::vector<kube::Json> events = Events();
  ASSERT_THAT(events, SizeIs(3));
  EXPECT_EQ(events[0]["reason"], "GPUUnhealthy");
  EXPECT_THAT(events[0].value("note", ""), HasSubstr("GPU 2"));
  EXPECT_EQ(kube::ParseTimestamp(events[0].value("eventTime", "")).value_or(absl::Time()),
            absl::FromUnixMicros(absl::ToUnixMicros(t0 + absl::Minutes(1))));  // MicroTime
  EXPECT_EQ(events[1]["reason"], "GPUUnhealthy");
  EXPECT_THAT(events[1].value("note", ""), HasSubstr("GPU lost"));
  EXPECT_EQ(events[2]["reason"], "GPURecovered");
  EXPECT_THAT(events[2].value("note", ""), HasSubstr("was: XID 48"));
  EXPECT_GT(publisher->stats().write_failures, 0);
}

TEST_F(AgentHealthIntegrationTest, RestartKeepsTheTransitionTime) {
  const absl::Time t0 = absl::Now() - absl::Hours(1);
  const agent::HealthReport sick = Report(
      t0, {Gpu(0, agent::Unhealthy{
                      .code = "RowRemapFailure", .reason = "row remap failure", .since = t0})});
  {
    auto publisher = MakePublisher();
    publisher->Update(sick, {});
    ASSERT_TRUE(publisher->WaitUntilPublished(kWait));
  }
  EXPECT_EQ(GpuHealthy().last_transition_time, Seconds(t0));
  // A new agent process sees the same problem later: the condition's status did not change.
  auto publisher = MakePublisher();
  publisher->Update(Report(absl::Now(), sick.devices), {});
  ASSERT_TRUE(publisher->WaitUntilPublished(kWait));
  const kube::Condition c = GpuHealthy();
  EXPECT_EQ(c.status, "False");
  EXPECT_EQ(c.last_transition_time, Seconds(t0));
}

}  // namespace
}  // namespace gpuop::test
