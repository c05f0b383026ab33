// The MIG manager against a real kube-apiserver: labels, annotations and Events on a real Node,
// the GPU clients' pods on that node, and the fake NVML machine underneath.
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "agent/mig/mig_manager.h"
#include "agent/mig/mig_node.h"
#include "common/files.h"
#include "kube/events/event_recorder.h"
#include "kube/types/json_fields.h"
#include "test/cluster/test_api.h"
#include "test/fakes/node_objects.h"
#include "test/fakes/nvml/fake_machine.h"
#include "test/integration/kube_test_util.h"

namespace gpuop::test {
namespace {

using ::testing::HasSubstr;
namespace resources = kube::resources;
namespace mig = agent::mig;

constexpr char kConfig[] = R"(
version: v1
mig-configs:
  all-1g.5gb:
    - {devices: all, mig-enabled: true, mig-devices: {"1g.5gb": 7}}
  too-big:
    - {devices: [4], mig-enabled: true, mig-devices: {"4g.20gb": 2}}
)";
constexpr char kDevicePlugin[] = "gpuop.io/deploy.device-plugin";
constexpr char kExporter[] = "gpuop.io/deploy.exporter";
constexpr char kHealth[] = "gpuop.io/deploy.health";
constexpr char kComponentLabel[] = "app.kubernetes.io/component";

class AgentMigIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(machine_.ok());
    client_ = AdminClient();
    ASSERT_NE(client_, nullptr);
    ns_ = CreateTestNamespace(*client_, "mig");
    node_name_ = UniqueName("mig-node");
    kube::Json node = fakes::KwokGpuNode(node_name_, 8);
    node["metadata"]["labels"] = {{kDevicePlugin, "true"}, {kExporter, "false"}, {"team", "ml"}};
    ASSERT_TRUE(client_->Create(resources::kNodes, "", node).ok());
    // The device plugin's pod runs on the node.
    kube::Json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata",
         {{"name", "gpuop-device-plugin-x1"},
          {"labels",
           {{"app.kubernetes.io/part-of", "gpuop"}, {kComponentLabel, "device-plugin"}}}}},
        {"spec",
         {{"nodeName", node_name_},
          {"containers", {{{"name", "plugin"}, {"image", "gpuop/agent:test"}}}}}}};
    ASSERT_TRUE(client_->Create(resources::kPods, ns_, pod).ok());
    ASSERT_TRUE(common::WriteFileAtomically(machine_.dir() / "mig.yaml", kConfig).ok());
    auto recorder = kube::EventRecorder::Create(
        *client_, {.reporting_controller = "gpuop.io/agent", .reporting_instance = "agent-test"});
    ASSERT_TRUE(recorder.ok()) << recorder.status();
    recorder_ = *std::move(recorder);
    node_ = std::make_unique<mig::KubeMigNode>(*client_, node_name_, mig::kConfigLabel,
                                               recorder_.get(), ns_);
  }

  void TearDown() override {
    StopOperator();
    manager_.reset();
    node_.reset();
    if (recorder_ != nullptr) recorder_->Stop();
    if (client_ != nullptr) {
      (void)client_->Delete(resources::kNodes, "", node_name_);
      (void)client_->Delete(resources::kNamespaces, "", ns_);
    }
  }

  mig::MigManager& Manager() {
    manager_ = std::make_unique<mig::MigManager>(
        machine_.nvml(), *node_,
        mig::MigManagerOptions{.config_file = machine_.dir() / "mig.yaml",
                               .layout_file = machine_.dir() / "mig-layout",
                               .change_deadline = absl::Minutes(2),
                               .pod_stop_timeout = absl::Minutes(1),
                               .poll_interval = absl::Milliseconds(100)});
    return *manager_;
  }

  std::map<std::string, std::string> Meta(const char* field) {
    auto got = client_->Get(resources::kNodes, "", node_name_);
    EXPECT_TRUE(got.ok()) << got.status();
    std::map<std::string, std::string> out;
    if (got.ok()) {
      for (const auto& [k, v] : (*got)["metadata"][field].items()) out[k] = v;
    }
    return out;
  }

  // Plays the operator: once the device plugin's deploy label is paused, its pod goes; records
  // the node's state label seen at that moment.
  void StartOperator() {
    operator_ = std::jthread([this](std::stop_token stop) {
      while (!stop.stop_requested()) {
        auto labels = Meta("labels");
        if (labels[kDevicePlugin] == mig::kPausedValue && !pod_deleted_) {
          state_when_paused_ = labels[mig::kStateLabel];
          paused_labels_ =
              absl::StrCat(labels[kDevicePlugin], " ", labels[kExporter], " ", labels[kHealth]);
          EXPECT_TRUE(client_
                          ->Delete(resources::kPods, ns_, "gpuop-device-plugin-x1",
                                   {.grace_period_seconds = 0})
                          .ok());
          pod_deleted_ = true;
        }
        absl::SleepFor(absl::Milliseconds(50));
      }
    });
  }
  void StopOperator() {
    if (operator_.joinable()) {
      operator_.request_stop();
      operator_.join();
    }
  }

  void ExpectRestored() {
    auto labels = Meta("labels");
    EXPECT_EQ(labels[kDevicePlugin], "true");
    EXPECT_EQ(labels[kExporter], "false");
    EXPECT_FALSE(labels.contains(kHealth));
    EXPECT_EQ(labels["team"], "ml");
    EXPECT_FALSE(Meta("annotations").contains(mig::kPauseRecordAnnotation));
  }

  fakes::FakeMachine machine_{"a100-8x-mig"};
  std::unique_ptr<kube::Client> client_;
  std::string ns_;
  std::string node_name_;
  std::unique_ptr<kube::EventRecorder> recorder_;
  std::unique_ptr<mig::KubeMigNode> node_;
  std::unique_ptr<mig::MigManager> manager_;
  std::jthread operator_;
  std::atomic<bool> pod_deleted_{false};
  std::string state_when_paused_;  // written by the operator thread before pod_deleted_
  std::string paused_labels_;
};

TEST_F(AgentMigIntegrationTest, LabelledNodeGoesPendingThenSuccessWithClientsRestored) {
  StartOperator();
  mig::MigManager& manager = Manager();
  manager.Start();
  ASSERT_TRUE(client_
                  ->Patch(resources::kNodes, "", node_name_, kube::PatchType::kMergePatch,
                          {{"metadata", {{"labels", {{mig::kConfigLabel, "all-1g.5gb"}}}}}})
                  .ok());
  const absl::Status done =
      WaitUntil("state success", absl::Seconds(60), [&]() -> absl::StatusOr<bool> {
        return Meta("labels")[mig::kStateLabel] == mig::kStateSuccess;
      });
  ASSERT_TRUE(done.ok()) << done << " reason: " << Meta("annotations")[mig::kReasonAnnotation];
  manager.Stop();

  ASSERT_TRUE(pod_deleted_);
  EXPECT_EQ(state_when_paused_, mig::kStatePending);
  EXPECT_EQ(paused_labels_,
            absl::StrCat(mig::kPausedValue, " ", mig::kPausedValue, " ", mig::kPausedValue));
  ExpectRestored();
  auto labels = Meta("labels");
  EXPECT_EQ(labels[mig::kGpuopStateLabel], mig::kStateSuccess);
  EXPECT_THAT(Meta("annotations")[mig::kReasonAnnotation],
              HasSubstr("MIG layout all-1g.5gb applied: GPU 0: 7x1g.5gb"));
  for (const hw::Gpu& gpu : machine_.Discover().gpus) {
    EXPECT_EQ(gpu.mig_devices.size(), 7u) << gpu.index;
  }
  recorder_->Stop();
  EXPECT_GE(recorder_->stats().created, 2);  // pending, applied
}

TEST_F(AgentMigIntegrationTest, FailingLayoutEndsFailedWithTheReasonAndClientsRestored) {
  StartOperator();
  ASSERT_TRUE(client_
                  ->Patch(resources::kNodes, "", node_name_, kube::PatchType::kMergePatch,
                          {{"metadata", {{"labels", {{mig::kConfigLabel, "too-big"}}}}}})
                  .ok());
  const mig::MigSyncResult result = Manager().SyncOnce();
  EXPECT_EQ(result.outcome, mig::MigSyncResult::Outcome::kFailed);
  ASSERT_TRUE(pod_deleted_);
  auto labels = Meta("labels");
  EXPECT_EQ(labels[mig::kStateLabel], mig::kStateFailed);
  EXPECT_EQ(labels[mig::kGpuopStateLabel], mig::kStateFailed);
  EXPECT_EQ(Meta("annotations")[mig::kReasonAnnotation],
            "MIG layout too-big failed: GPU 4 (NVIDIA A100-SXM4-40GB): 2x4g.20gb does not fit: "
            "at most 1 fit");
  ExpectRestored();
}

}  // namespace
}  // namespace gpuop::test
