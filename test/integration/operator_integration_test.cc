// The operator process (gpuop::op::Operator) against the real kube-apiserver: it installs its
// CRDs, labels GPU nodes (and only those), keeps a GPUNode per GPU node, applies the operands the
// policy asks for, prunes what the policy no longer asks for, reports status, and only the
// replica holding the Lease acts. The `apiserver` profile has no DaemonSet controller, so the
// operands' pods never start here (the e2e tests and the demo cover that).
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kube/client/resource.h"
#include "operator/api/resources.h"
#include "operator/app/operator.h"
#include "operator/crds/crds.h"
#include "test/cluster/test_api.h"
#include "test/integration/kube_test_util.h"

namespace gpuop::test {
namespace {

using ::testing::HasSubstr;

// One operator replica running on a thread of its own.
class Replica {
 public:
  Replica(kube::Client& client, const std::string& ns, const std::string& identity)
      : op_(client, registry_,
            {.ns = ns,
             .identity = identity,
             .lease_duration = absl::Seconds(3),
             .renew_deadline = absl::Seconds(2),
             .retry_period = absl::Milliseconds(500),
             .node_workers = 2}),
        thread_([this](std::stop_token stop) { result_ = op_.Run(stop); }) {}
  ~Replica() { Stop(); }
  void Stop() {
    thread_.request_stop();
    if (thread_.joinable()) thread_.join();
  }
  op::Operator& op() { return op_; }
  absl::Status result() const { return result_; }

 private:
  metrics::Registry registry_;
  op::Operator op_;
  absl::Status result_;
  std::jthread thread_;
};

class OperatorIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = AdminClient();
    ASSERT_NE(client_, nullptr);
    ns_ = CreateTestNamespace(*client_, "gpuop");
    // The operator installs them too, but the test writes a policy before it may have.
    ASSERT_TRUE(op::InstallCrds(*client_, absl::Seconds(60)).ok());
    for (const std::string& name : {gpu_a_, gpu_b_}) {
      // As node-feature-discovery labels a Debian 12 GPU node: the driver image follows its OS.
      ASSERT_TRUE(
          CreateNode(name, {{"feature.node.kubernetes.io/pci-10de.present", "true"},
                            {"feature.node.kubernetes.io/system-os_release.ID", "debian"},
                            {"feature.node.kubernetes.io/system-os_release.VERSION_ID", "12"}})
              .ok());
    }
    ASSERT_TRUE(CreateNode(cpu_, {}).ok());
  }
  void TearDown() override {
    (void)client_->Delete(op::kGpuClusterPolicies, "", "default");
    for (const std::string& name : {gpu_a_, gpu_b_, cpu_}) {
      (void)client_->Delete(kube::resources::kNodes, "", name);
    }
  }

  absl::Status CreateNode(const std::string& name, const kube::Json& labels) {
    kube::Json node = {
        {"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", name}, {"labels", labels}}}};
    return client_->Create(kube::resources::kNodes, "", node).status();
  }
  absl::Status ApplyPolicy(const kube::Json& spec) {
    kube::Json policy = {{"apiVersion", "gpuop.io/v1alpha1"},
                         {"kind", "GPUClusterPolicy"},
                         {"metadata", {{"name", "default"}}},
                         {"spec", spec}};
    return client_->Apply(op::kGpuClusterPolicies, policy, "test", true).status();
  }
  std::string Label(const std::string& node, const std::string& key) {
    auto object = client_->Get(kube::resources::kNodes, "", node);
    if (!object.ok()) return "<error>";
    const kube::Json& labels = (*object)["metadata"].value("labels", kube::Json::object());
    return labels.value(key, "");
  }
  bool Exists(const kube::ResourceType& type, const std::string& ns, const std::string& name) {
    return client_->Get(type, ns, name).ok();
  }
  absl::Status WaitFor(const std::string& what, const std::function<bool()>& check) {
    return WaitUntil(what, absl::Seconds(60), [&]() -> absl::StatusOr<bool> { return check(); });
  }

  std::unique_ptr<kube::Client> client_;
  std::string ns_;
  const std::string gpu_a_ = UniqueName("gpu-a");
  const std::string gpu_b_ = UniqueName("gpu-b");
  const std::string cpu_ = UniqueName("cpu");
};

TEST_F(OperatorIntegrationTest, ConvergesPrunesAndReportsStatus) {
  Replica replica(*client_, ns_, "replica-1");
  ASSERT_TRUE(ApplyPolicy({{"driver", {{"version", "570.86.15"}}}}).ok());

  ASSERT_TRUE(WaitFor("GPU nodes labelled", [&] {
                return Label(gpu_a_, "gpuop.io/managed") == "true" &&
                       Label(gpu_b_, "gpuop.io/deploy.exporter") == "true";
              }).ok());
  EXPECT_EQ(Label(gpu_a_, "gpuop.io/deploy.driver"), "true");
  EXPECT_EQ(Label(gpu_a_, "gpuop.io/driver.pool"), "default");
  EXPECT_EQ(Label(cpu_, "gpuop.io/managed"), "") << "a CPU node is not the operator's";

  ASSERT_TRUE(WaitFor("GPUNodes", [&] {
                return Exists(op::kGpuNodes, "", gpu_a_) && Exists(op::kGpuNodes, "", gpu_b_);
              }).ok());
  EXPECT_FALSE(Exists(op::kGpuNodes, "", cpu_));
  // The MPS daemons come with the device plugin but run only where the configuration shares
  // GPUs with MPS: elsewhere the GPUNode says so instead of waiting for a pod.
  std::string mps_state;
  EXPECT_TRUE(WaitFor("the GPUNode's components", [&] {
                auto gpu_node = client_->Get(op::kGpuNodes, "", gpu_a_);
                if (!gpu_node.ok() || !gpu_node->contains("status") ||
                    !(*gpu_node)["status"].contains("components")) {
                  return false;
                }
                for (const auto& c : (*gpu_node)["status"]["components"]) {
                  if (c.value("name", "") == "mps-daemon") mps_state = c.value("state", "");
                }
                return !mps_state.empty();
              }).ok());
  EXPECT_EQ(mps_state, "Skipped");
  ASSERT_TRUE(WaitFor("operands applied", [&] {
                return Exists(kube::resources::kDaemonSets, ns_, "gpuop-exporter") &&
                       Exists(kube::resources::kDaemonSets, ns_, "gpuop-driver-debian12") &&
                       Exists(kube::resources::kServiceAccounts, ns_, "gpuop-health");
              }).ok());
  auto exporter = client_->Get(kube::resources::kDaemonSets, ns_, "gpuop-exporter");
  ASSERT_TRUE(exporter.ok());
  EXPECT_EQ((*exporter)["metadata"]["labels"]["app.kubernetes.io/managed-by"], "gpuop-operator");
  EXPECT_FALSE((*exporter)["metadata"]["annotations"].value("gpuop.io/spec-hash", "").empty());

  // Status: observed, two of its nodes counted, and not Ready: nothing runs the DaemonSets here.
  // Waits for the state asserted below, not for the first status written: right after the
  // DaemonSets are created the Ready message can still say one is "not created yet".
  kube::Json status;
  auto settled = [](const kube::Json& st) {
    if (!st.contains("conditions") || !st["conditions"].is_array()) return false;
    for (const auto& c : st["conditions"]) {
      if (c.value("type", "") == "Ready" &&
          c.value("message", "").find("waiting for the DaemonSet controller") !=
              std::string::npos) {
        return true;
      }
    }
    return false;
  };
  const bool waited =
      WaitFor("policy status", [&] {
        auto policy = client_->Get(op::kGpuClusterPolicies, "", "default");
        if (!policy.ok() || !policy->contains("status")) return false;
        status = (*policy)["status"];
        return status.value("observedGeneration", 0) == (*policy)["metadata"]["generation"] &&
               status.contains("nodes") && status["nodes"].is_object() &&
               status["nodes"].value("total", 0) >= 2 && settled(status);
      }).ok();
  EXPECT_TRUE(waited) << status.dump();
  EXPECT_GE(status["nodes"]["total"].get<int>(), 2);
  bool saw_ready = false;
  for (const auto& c : status["conditions"]) {
    if (c["type"] != "Ready") continue;
    saw_ready = true;
    EXPECT_EQ(c["status"], "False");
    EXPECT_EQ(c["reason"], "ComponentNotReady");
    EXPECT_THAT(c["message"].get<std::string>(), HasSubstr("waiting for the DaemonSet controller"))
        << status.dump();
  }
  EXPECT_TRUE(saw_ready);

  // Turning the exporter off prunes its DaemonSet and takes its label off the nodes.
  ASSERT_TRUE(ApplyPolicy({{"driver", {{"version", "570.86.15"}}},
                           {"components", {{"exporter", {{"enabled", false}}}}}})
                  .ok());
  ASSERT_TRUE(WaitFor("exporter pruned", [&] {
                return !Exists(kube::resources::kDaemonSets, ns_, "gpuop-exporter") &&
                       Label(gpu_a_, "gpuop.io/deploy.exporter").empty();
              }).ok());
  EXPECT_TRUE(Exists(kube::resources::kDaemonSets, ns_, "gpuop-driver-debian12"));

  // A DaemonSet deleted by hand comes back at once.
  ASSERT_TRUE(client_->Delete(kube::resources::kDaemonSets, ns_, "gpuop-driver-debian12").ok());
  EXPECT_TRUE(WaitFor("driver DaemonSet restored", [&] {
                return Exists(kube::resources::kDaemonSets, ns_, "gpuop-driver-debian12");
              }).ok());

  // Deleting the policy removes every operand and the operator's node labels but the drivers:
  // no driver is taken away under running workloads without the upgrade's ceremony.
  ASSERT_TRUE(client_->Delete(op::kGpuClusterPolicies, "", "default").ok());
  EXPECT_TRUE(WaitFor("everything but the drivers pruned", [&] {
                return !Exists(kube::resources::kServiceAccounts, ns_, "gpuop-health") &&
                       Label(gpu_a_, "gpuop.io/managed").empty();
              }).ok());
  EXPECT_TRUE(Exists(kube::resources::kDaemonSets, ns_, "gpuop-driver-debian12"));
  EXPECT_TRUE(Exists(kube::resources::kServiceAccounts, ns_, "gpuop-driver"));
  EXPECT_EQ(Label(gpu_a_, "gpuop.io/deploy.driver"), "true");
  replica.Stop();
  EXPECT_TRUE(replica.result().ok()) << replica.result();
}

TEST_F(OperatorIntegrationTest, OnlyTheLeaseHolderActsAndAStandbyTakesOver) {
  auto first = std::make_unique<Replica>(*client_, ns_, "replica-1");
  ASSERT_TRUE(WaitFor("a leader", [&] { return first->op().IsLeader(); }).ok());
  Replica second(*client_, ns_, "replica-2");
  ASSERT_TRUE(WaitFor("the standby's cache", [&] { return second.op().Ready(); }).ok());
  absl::SleepFor(absl::Seconds(2));
  EXPECT_FALSE(second.op().IsLeader()) << "two leaders";

  first.reset();  // a clean shutdown releases the Lease
  ASSERT_TRUE(WaitFor("the standby to lead", [&] { return second.op().IsLeader(); }).ok());
  ASSERT_TRUE(ApplyPolicy({{"driver", {{"version", "570.86.15"}}}}).ok());
  EXPECT_TRUE(WaitFor("the new leader to label", [&] {
                return Label(gpu_b_, "gpuop.io/managed") == "true";
              }).ok());
}

}  // namespace
}  // namespace gpuop::test
