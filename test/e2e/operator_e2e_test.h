// The operator end to end (the fixture; its three acts are in operator_e2e_*.cc), as a user meets
// it: the gpuop-operator binary runs as a process against a full control plane (etcd,
// kube-apiserver, controller-manager, scheduler) whose nodes kwok simulates, and the test only
// writes what a person would (nodes, a policy, a workload) and reads what they would see. In three
// acts on the same cluster:
//   1. Converge: 20 GPU nodes and one CPU node; the policy's DaemonSets run on every GPU node.
//   2. A rolling driver upgrade with a PodDisruptionBudget in the way, never more than
//      maxParallel nodes at once, through a SIGKILL of the operator and a new operator process;
//      a node cordoned by a person beforehand is upgraded and stays cordoned.
//   3. An XID on a node whose real gpuop-agent health process reads the fake NVML: the operator
//      taints, drains, restarts the driver, waits for the GPU to recover, and returns the node.
#ifndef GPUOP_TEST_E2E_OPERATOR_E2E_TEST_H_
#define GPUOP_TEST_E2E_OPERATOR_E2E_TEST_H_

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "kube/client/client.h"
#include "operator/api/resources.h"
#include "test/cluster/cluster_environment.h"
#include "test/e2e/operator_e2e_util.h"
#include "test/fakes/node_objects.h"

namespace gpuop::test {

using kube::Json;
using ::testing::Contains;
using ::testing::IsEmpty;
namespace resources = kube::resources;

inline const kube::ResourceType& kPolicies = op::kGpuClusterPolicies;
inline const kube::ResourceType& kGpuNodes = op::kGpuNodes;

inline constexpr int kGpuNodeCount = 20;
inline constexpr int kMaxParallel = 3;
inline constexpr char kOldDriver[] = "570.86.15";
inline constexpr char kNewDriver[] = "570.124.06";
inline constexpr int kTrainerReplicas = 3;

// The label keys and values the operator keeps its state in (src/operator/api/node_state.h),
// spelled out here as the contract a user and kubectl see.
inline constexpr char kManaged[] = "gpuop.io/managed";
inline constexpr char kUpgradeState[] = "gpuop.io/driver-upgrade-state";
inline constexpr char kUpgradeDone[] = "upgrade-done";
inline constexpr char kUpgradeFailed[] = "upgrade-failed";
inline constexpr char kUpgradeMessage[] = "gpuop.io/driver-upgrade-message";
inline constexpr char kRemediationState[] = "gpuop.io/remediation-state";
inline constexpr char kRemediationStep[] = "gpuop.io/remediation-step";
inline constexpr char kRemediationSince[] = "gpuop.io/remediation-since";
inline constexpr char kRemediationAttempts[] = "gpuop.io/remediation-attempts";
inline constexpr char kRemediationMessage[] = "gpuop.io/remediation-message";
inline constexpr char kRemediationTaint[] = "gpuop.io/remediation";

// The upgrade states in which a node holds one of the maxParallel slots.
inline bool UpgradeInProgress(const std::string& state) {
  static const std::set<std::string> kInProgress = {
      "cordon-required",      "wait-for-jobs-required", "pod-deletion-required", "drain-required",
      "pod-restart-required", "validation-required",    "uncordon-required"};
  return kInProgress.contains(state);
}

inline std::string Name(const Json& object) { return object["metadata"].value("name", ""); }

class OperatorE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<kube::Client>> client = AdminClient();
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
    run_ = UniqueName("op");
    work_dir_ = std::filesystem::temp_directory_path() / UniqueName("gpuop-operator-e2e");
    std::filesystem::create_directories(work_dir_);

    ns_ = run_ + "-system";
    apps_ = run_ + "-apps";
    for (const std::string& ns : {ns_, apps_}) {
      ASSERT_TRUE(
          client_
              ->Create(resources::kNamespaces, "",
                       {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}})
              .ok());
    }
    for (int i = 0; i < kGpuNodeCount; ++i) {
      gpu_nodes_.push_back(absl::StrFormat("%s-gpu-%02d", run_, i));
      Json node = fakes::KwokGpuNode(gpu_nodes_.back(), 8);  // NFD's pci-10de label included
      node["metadata"]["labels"]["e2e.gpuop.io/run"] = run_;
      ASSERT_TRUE(client_->Create(resources::kNodes, "", node).ok()) << gpu_nodes_.back();
    }
    cpu_node_ = run_ + "-cpu";
    const Json cpu = {{"apiVersion", "v1"},
                      {"kind", "Node"},
                      {"metadata",
                       {{"name", cpu_node_},
                        {"annotations", {{"kwok.x-k8s.io/node", "fake"}}},
                        {"labels",
                         {{"kubernetes.io/os", "linux"},
                          {"kubernetes.io/hostname", cpu_node_},
                          {"type", "kwok"},
                          {"e2e.gpuop.io/run", run_}}}}},
                      {"status",
                       {{"capacity", {{"cpu", "64"}, {"memory", "512Gi"}, {"pods", "110"}}},
                        {"allocatable", {{"cpu", "64"}, {"memory", "512Gi"}, {"pods", "110"}}}}}};
    ASSERT_TRUE(client_->Create(resources::kNodes, "", cpu).ok());
  }

  void TearDown() override {
    std::vector<ChildProcess*> children = {agent_.get(), operator_.get(), killed_operator_.get()};
    for (ChildProcess* child : children) {
      if (child == nullptr) continue;
      const absl::Status stopped = child->Stop();
      EXPECT_TRUE(stopped.ok()) << stopped;
    }
    if (HasFailure() || std::getenv("GPUOP_E2E_KEEP_LOGS") != nullptr) {
      for (ChildProcess* child : children) {
        if (child == nullptr) continue;
        std::cerr << "---- " << child->log().string() << " (" << child->DescribeExit()
                  << "), last lines:\n"
                  << child->LogTail() << "\n";
      }
      std::cerr << "logs kept in " << work_dir_.string() << "\n";
    } else {
      std::error_code ignored;
      std::filesystem::remove_all(work_dir_, ignored);
    }
    if (client_ == nullptr) return;
    (void)client_->Delete(kPolicies, "", "default");
    for (const std::string& ns : {apps_, ns_}) {
      (void)client_->Delete(resources::kNamespaces, "", ns);
    }
    for (const std::string& node : gpu_nodes_) (void)client_->Delete(resources::kNodes, "", node);
    if (!cpu_node_.empty()) (void)client_->Delete(resources::kNodes, "", cpu_node_);
  }

  // Starts an operator process as `identity` into operator_ (the previous one must be gone).
  void StartOperator(const std::string& identity) {
    absl::StatusOr<std::unique_ptr<ChildProcess>> started =
        ChildProcess::Start({GPUOP_OPERATOR_BINARY, "run", "--kubeconfig",
                             ClusterEnvironment::Get().kubeconfig().string(), "--namespace", ns_,
                             "--listen", "127.0.0.1:0", "--leader-elect", "--identity", identity},
                            {}, work_dir_ / absl::StrCat("operator-", identity, ".log"));
    ASSERT_TRUE(started.ok()) << started.status();
    operator_ = *std::move(started);
  }

  // This run's Nodes by name.
  absl::StatusOr<std::map<std::string, Json>> Nodes() {
    absl::StatusOr<kube::ObjectList> list =
        client_->List(resources::kNodes, "", {.label_selector = "e2e.gpuop.io/run=" + run_});
    if (!list.ok()) return list.status();
    std::map<std::string, Json> out;
    for (Json& node : list->items) {
      const std::string name = Name(node);
      out[name] = std::move(node);
    }
    return out;
  }

  // The pods of `daemon_set` in the operator's namespace, by node.
  absl::StatusOr<std::map<std::string, Json>> OperandPods(const std::string& daemon_set) {
    absl::StatusOr<kube::ObjectList> list = client_->List(resources::kPods, ns_);
    if (!list.ok()) return list.status();
    std::map<std::string, Json> out;
    for (Json& pod : list->items) {
      bool owned = false;
      for (const Json& owner : pod["metadata"].value("ownerReferences", Json::array())) {
        owned = owned ||
                (owner.value("kind", "") == "DaemonSet" && owner.value("name", "") == daemon_set);
      }
      const std::string node = pod["spec"].value("nodeName", "");
      if (owned && !node.empty()) out[node] = std::move(pod);
    }
    return out;
  }

  absl::StatusOr<std::vector<Json>> TrainerPods() {
    absl::StatusOr<kube::ObjectList> list =
        client_->List(resources::kPods, apps_, {.label_selector = "app=trainer"});
    if (!list.ok()) return list.status();
    return list->items;
  }

  // "" once the policy reports Ready=True for its current generation.
  absl::StatusOr<std::string> PolicyNotReady() {
    absl::StatusOr<Json> policy = client_->Get(kPolicies, "", "default");
    if (!policy.ok()) return policy.status();
    const Json& status = (*policy).value("status", Json::object());
    if (status.value("observedGeneration", int64_t{-1}) !=
        (*policy)["metadata"].value("generation", int64_t{0})) {
      return "the policy's status is for an older generation";
    }
    if (ConditionStatus(*policy, "Ready") != "True") {
      return "policy not Ready: " + status.value("conditions", Json::array()).dump();
    }
    return "";
  }

  // "" once the trainer Deployment has all its replicas ready and up to date.
  absl::StatusOr<std::string> TrainerNotReady() {
    absl::StatusOr<Json> deployment = client_->Get(resources::kDeployments, apps_, "trainer");
    if (!deployment.ok()) return deployment.status();
    const Json& status = (*deployment).value("status", Json::object());
    if (status.value("readyReplicas", 0) == kTrainerReplicas &&
        status.value("updatedReplicas", 0) == kTrainerReplicas &&
        status.value("replicas", 0) == kTrainerReplicas) {
      return "";
    }
    return "trainer Deployment status " + status.dump();
  }

  void Converge();
  void UpgradeThroughAnOperatorKill();
  void RemediateAnXid();
  void MoveANodeToAPool();
  // Turns spec.upgrade.autoUpgrade on or off.
  void SetAutoUpgrade(bool on);
  // Where a node's driver is to move: the node label that selects its driver DaemonSet
  // (gpuop.io/driver.pool, gpuop.io/driver.os), the annotation that holds the target while the
  // driver runs, the value, and the DaemonSet that value selects.
  struct DriverMove {
    std::string label;
    std::string annotation;
    std::string to;
    std::string to_ds;
  };
  static DriverMove ToPool(const std::string& pool, const std::string& ds);
  static DriverMove ToOs(const std::string& os, const std::string& ds);
  // Runs `change` (which moves `node` from DaemonSet `from_ds` as `move` says) with automatic
  // upgrades off, checks the node holds with its old driver, then lets the upgrade move it.
  void MoveAndHold(const std::string& node, const std::string& from_ds, const DriverMove& move,
                   const std::function<void()>& change);

  std::unique_ptr<kube::Client> client_;
  std::string run_;
  std::filesystem::path work_dir_;
  std::string ns_;    // the operator's: its DaemonSets and Lease
  std::string apps_;  // a user's workload
  std::vector<std::string> gpu_nodes_;
  std::string cpu_node_;
  std::string precordoned_;
  std::unique_ptr<ChildProcess> operator_;
  std::unique_ptr<ChildProcess> killed_operator_;
  std::unique_ptr<ChildProcess> agent_;
};

}  // namespace gpuop::test

#endif  // GPUOP_TEST_E2E_OPERATOR_E2E_TEST_H_
