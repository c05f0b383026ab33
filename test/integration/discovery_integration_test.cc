// GPU node discovery and the RuntimeClass against the real kube-apiserver: `gpuop-agent
// discover-pci` labels its Node from a fake PCI sysfs, the operator counts the node as a GPU node
// from that label, the labels component never takes the label away again, and the operator never
// applies over a RuntimeClass "nvidia" someone else created.
#include <fstream>
#include <stop_token>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/discover/pci_node.h"
#include "agent/labels/node_labeler.h"
#include "kube/client/resource.h"
#include "kube/types/node.h"
#include "operator/nodes/node_labels.h"
#include "operator/operands/applier.h"
#include "operator/render/render.h"
#include "test/cluster/test_api.h"
#include "test/fakes/sysfs/fake_sysfs.h"
#include "test/fakes/sysfs/presets.h"
#include "test/integration/kube_test_util.h"

namespace gpuop::test {
namespace {

using ::testing::HasSubstr;

class DiscoveryIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = AdminClient();
    ASSERT_NE(client_, nullptr);
  }
  void TearDown() override {
    for (const std::string& name : nodes_) (void)client_->Delete(kube::resources::kNodes, "", name);
  }
  std::string CreateNode() {
    const std::string name = UniqueName("node");
    kube::Json node = {{"apiVersion", "v1"},
                       {"kind", "Node"},
                       {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/os", "linux"}}}}}};
    EXPECT_TRUE(client_->Create(kube::resources::kNodes, "", node).ok());
    nodes_.push_back(name);
    return name;
  }
  kube::Json Labels(const std::string& node) {
    absl::StatusOr<kube::Json> object = client_->Get(kube::resources::kNodes, "", node);
    EXPECT_TRUE(object.ok()) << object.status();
    return object.ok() ? (*object)["metadata"].value("labels", kube::Json::object())
                       : kube::Json::object();
  }
  bool IsGpuNode(const std::string& node) {
    absl::StatusOr<kube::Json> object = client_->Get(kube::resources::kNodes, "", node);
    if (!object.ok()) return false;
    absl::StatusOr<kube::Node> parsed = kube::ParseNode(*object);
    return parsed.ok() && op::IsGpuNode(*parsed);
  }

  std::unique_ptr<kube::Client> client_;
  std::vector<std::string> nodes_;
};

TEST_F(DiscoveryIntegrationTest, TheAgentLabelsGpuAndCpuNodes) {
  fakes::TempDir gpu_sysfs;
  fakes::NvidiaHgxNode(gpu_sysfs.path(), /*driver_loaded=*/false);
  fakes::TempDir cpu_sysfs;
  fakes::EmptyNode(cpu_sysfs.path());
  const std::string gpu = CreateNode();
  const std::string cpu = CreateNode();
  EXPECT_FALSE(IsGpuNode(gpu));

  const std::string os_release = (gpu_sysfs.path() / "os-release").string();
  std::ofstream(os_release) << "NAME=\"Ubuntu\"\nVERSION_ID=\"24.04\"\nID=ubuntu\n";
  std::stop_source stop;
  absl::StatusOr<agent::PciNodeVerdict> verdict = agent::DiscoverAndLabel(
      *client_, {.sysfs_root = gpu_sysfs.string(), .os_release = os_release, .node_name = gpu},
      stop.get_token());
  ASSERT_TRUE(verdict.ok()) << verdict.status();
  EXPECT_EQ(Labels(gpu).value("gpuop.io/gpu.present", ""), "true");
  EXPECT_EQ(Labels(gpu).value("gpuop.io/gpu.vendor", ""), "nvidia");
  // The OS the operator picks the driver image by when NFD is not there.
  absl::StatusOr<kube::Json> labelled = client_->Get(kube::resources::kNodes, "", gpu);
  ASSERT_TRUE(labelled.ok());
  absl::StatusOr<kube::Node> parsed = kube::ParseNode(*labelled);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(op::NodeOsTag(*parsed), "ubuntu24.04");
  EXPECT_TRUE(IsGpuNode(gpu)) << "the operator finds it without NFD";

  ASSERT_TRUE(agent::DiscoverAndLabel(
                  *client_, {.sysfs_root = cpu_sysfs.string(), .node_name = cpu}, stop.get_token())
                  .ok());
  EXPECT_EQ(Labels(cpu).value("gpuop.io/gpu.present", ""), "false");
  EXPECT_FALSE(Labels(cpu).contains("gpuop.io/gpu.vendor"));
  EXPECT_FALSE(IsGpuNode(cpu));

  // The labels component writes the same keys from the drivers under its own manager; when it
  // stops computing them (the driver is down) the discovery's label stays, so the node is not
  // forgotten (and rediscovered) every time its driver restarts.
  agent::NodeLabeler labeler(*client_, gpu);
  ASSERT_TRUE(labeler
                  .Apply({{"gpuop.io/gpu.present", "true"},
                          {"gpuop.io/gpu.vendor", "nvidia"},
                          {"nvidia.com/gpu.count", "8"}})
                  .ok());
  ASSERT_TRUE(labeler.Apply({}).ok());
  EXPECT_EQ(Labels(gpu).value("gpuop.io/gpu.present", ""), "true");
  EXPECT_FALSE(Labels(gpu).contains("nvidia.com/gpu.count"));
}

TEST_F(DiscoveryIntegrationTest, TheAgentNeverCreatesANodeAndStopsPromptly) {
  const std::string missing = UniqueName("missing");
  absl::Status status = agent::LabelNode(*client_, missing, {{"gpuop.io/gpu.present", "false"}});
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_EQ(client_->Get(kube::resources::kNodes, "", missing).status().code(),
            absl::StatusCode::kNotFound);

  // Retrying against a Node that never comes: a stop ends the wait at once.
  fakes::TempDir sysfs;
  fakes::EmptyNode(sysfs.path());
  std::stop_source stop;
  std::jthread stopper([&stop] {
    absl::SleepFor(absl::Milliseconds(300));
    stop.request_stop();
  });
  const absl::Time start = absl::Now();
  absl::StatusOr<agent::PciNodeVerdict> verdict = agent::DiscoverAndLabel(
      *client_,
      {.sysfs_root = sysfs.string(), .node_name = missing, .retry_initial = absl::Minutes(10)},
      stop.get_token());
  EXPECT_EQ(verdict.status().code(), absl::StatusCode::kCancelled);
  EXPECT_LT(absl::Now() - start, absl::Seconds(30));
}

TEST_F(DiscoveryIntegrationTest, ARuntimeClassOfAnotherOwnerIsLeftAlone) {
  const std::string ns = CreateTestNamespace(*client_, "gpuop");
  op::PolicySpec policy;
  policy.driver.version = "570.86.15";
  absl::StatusOr<std::vector<nlohmann::json>> rendered =
      op::RenderOperands({.policy = policy, .ns = ns});
  ASSERT_TRUE(rendered.ok()) << rendered.status();

  // NVIDIA's operator (or a person) made it first, pointing at a handler that works there.
  const kube::Json theirs = {
      {"apiVersion", "node.k8s.io/v1"},
      {"kind", "RuntimeClass"},
      {"metadata",
       {{"name", "nvidia"}, {"labels", {{"app.kubernetes.io/managed-by", "gpu-operator"}}}}},
      {"handler", "nvidia"}};
  ASSERT_TRUE(client_->Create(kube::resources::kRuntimeClasses, "", theirs).ok());
  op::OperandApplier applier(*client_, ns);
  absl::StatusOr<op::ApplyReport> report = applier.Sync(*rendered);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->ok()) << report->errors.front();
  ASSERT_EQ(report->skipped.size(), 1u);
  EXPECT_THAT(report->skipped[0],
              HasSubstr("RuntimeClass nvidia: exists and is not managed by gpuop-operator "
                        "(app.kubernetes.io/managed-by=gpu-operator); left as it is"));
  absl::StatusOr<kube::Json> live = client_->Get(kube::resources::kRuntimeClasses, "", "nvidia");
  ASSERT_TRUE(live.ok());
  EXPECT_EQ((*live)["metadata"]["labels"]["app.kubernetes.io/managed-by"], "gpu-operator");
  EXPECT_FALSE((*live)["metadata"].contains("annotations"));
  for (const auto& entry : (*live)["metadata"]["managedFields"]) {
    EXPECT_NE(entry.value("manager", ""), "gpuop-operator") << entry.dump();
  }
  // Not the operator's, so not pruned when it no longer renders one.
  policy.components.runtime = false;
  ASSERT_TRUE(applier.Sync(*op::RenderOperands({.policy = policy, .ns = ns})).ok());
  EXPECT_TRUE(client_->Get(kube::resources::kRuntimeClasses, "", "nvidia").ok());

  // Once it is gone, the operator creates its own, and prunes that one later.
  ASSERT_TRUE(client_->Delete(kube::resources::kRuntimeClasses, "", "nvidia").ok());
  ASSERT_TRUE(
      WaitUntil("RuntimeClass nvidia deleted", absl::Seconds(30), [&]() -> absl::StatusOr<bool> {
        return absl::IsNotFound(
            client_->Get(kube::resources::kRuntimeClasses, "", "nvidia").status());
      }).ok());
  policy.components.runtime = true;
  report = applier.Sync(*op::RenderOperands({.policy = policy, .ns = ns}));
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->skipped.empty());
  live = client_->Get(kube::resources::kRuntimeClasses, "", "nvidia");
  ASSERT_TRUE(live.ok()) << live.status();
  EXPECT_EQ((*live)["metadata"]["labels"]["app.kubernetes.io/managed-by"], "gpuop-operator");
  policy.components.runtime = false;
  ASSERT_TRUE(applier.Sync(*op::RenderOperands({.policy = policy, .ns = ns})).ok());
  EXPECT_EQ(client_->Get(kube::resources::kRuntimeClasses, "", "nvidia").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace gpuop::test
