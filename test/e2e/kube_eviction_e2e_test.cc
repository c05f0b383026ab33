// Evictions through the gpuop client against a full control plane: a PodDisruptionBudget
// computed by the real disruption controller says "not now", and a budget with room allows it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "kube/client/client.h"
#include "kube/config/rest_config.h"
#include "test/cluster/cluster_environment.h"
#include "test/cluster/test_api.h"
#include "test/fakes/node_objects.h"

namespace gpuop::test {
namespace {

using kube::Json;
namespace resources = kube::resources;

class KubeEvictionE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto config = kube::LoadKubeconfig(ClusterEnvironment::Get().kubeconfig());
    ASSERT_TRUE(config.ok()) << config.status();
    auto rest = kube::RestClient::Create(*config);
    ASSERT_TRUE(rest.ok()) << rest.status();
    client_ = std::make_unique<kube::Client>(std::shared_ptr<kube::RestClient>(*std::move(rest)));

    ns_ = UniqueName("evict");
    ASSERT_TRUE(
        client_
            ->Create(resources::kNamespaces, "",
                     {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns_}}}})
            .ok());
    node_ = UniqueName("evict-node");
    ASSERT_TRUE(client_->Create(resources::kNodes, "", fakes::KwokGpuNode(node_, 8)).ok());
    // The ServiceAccount admission plugin needs the namespace's default account.
    ASSERT_TRUE(
        WaitUntil("default service account", absl::Seconds(60), [&]() -> absl::StatusOr<bool> {
          return client_->Get(resources::kServiceAccounts, ns_, "default").ok();
        }).ok());
  }

  void TearDown() override {
    (void)client_->Delete(resources::kNamespaces, "", ns_);
    (void)client_->Delete(resources::kNodes, "", node_);
  }

  void CreateRunningPod(const std::string& name) {
    Json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata", {{"name", name}, {"labels", {{"app", "guarded"}}}}},
        {"spec",
         {{"nodeName", node_},
          {"containers", {{{"name", "main"}, {"image", "example.invalid/train:never-pulled"}}}}}}};
    ASSERT_TRUE(client_->Create(resources::kPods, ns_, pod).ok());
    const absl::Status running =
        WaitUntil("pod running", absl::Seconds(60), [&]() -> absl::StatusOr<bool> {
          auto got = client_->Get(resources::kPods, ns_, name);
          if (!got.ok()) return got.status();
          return (*got)["status"].value("phase", "") == "Running";
        });
    ASSERT_TRUE(running.ok()) << running;
  }

  // Waits until the disruption controller has processed the budget and allows `allowed`.
  void AwaitBudget(int allowed) {
    const absl::Status ready =
        WaitUntil("budget computed", absl::Seconds(60), [&]() -> absl::StatusOr<bool> {
          auto pdb = client_->Get(resources::kPodDisruptionBudgets, ns_, "guard");
          if (!pdb.ok()) return pdb.status();
          const Json& status = (*pdb)["status"];
          return status.value("observedGeneration", 0) >=
                     (*pdb)["metadata"].value("generation", 1) &&
                 status.value("disruptionsAllowed", -1) == allowed;
        });
    ASSERT_TRUE(ready.ok()) << ready;
  }

  std::unique_ptr<kube::Client> client_;
  std::string ns_;
  std::string node_;
};

TEST_F(KubeEvictionE2eTest, BudgetBlocksThenAllowsEviction) {
  CreateRunningPod("train-0");
  ASSERT_TRUE(client_
                  ->Create(resources::kPodDisruptionBudgets, ns_, Json::parse(R"({
      "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
      "metadata": {"name": "guard"},
      "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}}})"))
                  .ok());
  AwaitBudget(0);

  auto blocked = client_->Evict(ns_, "train-0");
  ASSERT_TRUE(blocked.ok()) << blocked.status();  // "Not now" is an answer, not an error.
  EXPECT_EQ(blocked->outcome, kube::EvictionResult::Outcome::kBlocked);
  EXPECT_THAT(blocked->message, ::testing::HasSubstr("disruption budget"));
  EXPECT_TRUE(client_->Get(resources::kPods, ns_, "train-0").ok());

  // A second replica gives the budget room for one eviction.
  CreateRunningPod("train-1");
  AwaitBudget(1);
  auto evicted = client_->Evict(ns_, "train-0");
  ASSERT_TRUE(evicted.ok()) << evicted.status();
  EXPECT_EQ(evicted->outcome, kube::EvictionResult::Outcome::kEvicted);
  const absl::Status gone =
      WaitUntil("evicted pod deleted", absl::Seconds(60), [&]() -> absl::StatusOr<bool> {
        auto got = client_->Get(resources::kPods, ns_, "train-0");
        if (got.ok()) return false;
        return got.status().code() == absl::StatusCode::kNotFound;
      });
  EXPECT_TRUE(gone.ok()) << gone;

  // Evicting a pod that does not exist is an error, not a block.
  auto missing = client_->Evict(ns_, "no-such-pod");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound) << missing.status();
}

}  // namespace
}  // namespace gpuop::test
