// Act 4: a node with a running driver moves to a GPUNodePool of its own driver version. The
// DaemonSet controller would kill its driver at once if its gpuop.io/driver.pool label changed;
// the operator keeps the label, records the target, and the upgrade switches the label only once
// the node is cordoned, drained and gpuop's GPU clients are stopped.
#include <string>

#include "absl/strings/str_cat.h"
#include "test/e2e/operator_e2e_test.h"

namespace gpuop::test {

void OperatorE2eTest::MoveANodeToAPool() {
  constexpr char kPoolLabel[] = "e2e.gpuop.io/pool";
  // A node back in service after the acts before.
  std::string node;
  {
    absl::StatusOr<std::map<std::string, Json>> nodes = Nodes();
    ASSERT_TRUE(nodes.ok()) << nodes.status();
    for (auto it = gpu_nodes_.rbegin(); it != gpu_nodes_.rend(); ++it) {
      const Json& n = (*nodes)[*it];
      if (*it != precordoned_ && LabelOf(n, kUpgradeState) == kUpgradeDone &&
          LabelOf(n, kRemediationState).empty() && !Cordoned(n)) {
        node = *it;
        break;
      }
    }
  }
  ASSERT_FALSE(node.empty()) << "no node in service to move";
  absl::StatusOr<std::map<std::string, Json>> drivers = OperandPods("gpuop-driver");
  ASSERT_TRUE(drivers.ok()) << drivers.status();
  ASSERT_TRUE(drivers->contains(node));
  const std::string old_uid = (*drivers)[node]["metadata"].value("uid", "");

  const Json pool = {{"apiVersion", "gpuop.io/v1alpha1"},
                     {"kind", "GPUNodePool"},
                     {"metadata", {{"name", "moved"}}},
                     {"spec",
                      {{"nodeSelector", {{"matchLabels", {{kPoolLabel, "moved"}}}}},
                       {"driver", {{"version", kNewDriver}}}}}};
  ASSERT_TRUE(client_->Create(op::kGpuNodePools, "", pool).ok());
  ASSERT_TRUE(client_
                  ->Patch(resources::kNodes, "", node, kube::PatchType::kMergePatch,
                          {{"metadata", {{"labels", {{kPoolLabel, "moved"}}}}}})
                  .ok());

  bool target_seen_with_old_driver = false;
  std::string state_when_old_driver_went;  // the upgrade state when the old pod was gone
  bool cordoned_when_old_driver_went = false;
  const absl::Status moved = AwaitDone(
      "the node moved to pool moved", absl::Minutes(5), [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<Json> n = client_->Get(resources::kNodes, "", node);
        if (!n.ok()) return n.status();
        absl::StatusOr<std::map<std::string, Json>> old_pods = OperandPods("gpuop-driver");
        absl::StatusOr<std::map<std::string, Json>> new_pods = OperandPods("gpuop-driver-moved");
        if (!old_pods.ok()) return old_pods.status();
        if (!new_pods.ok()) return new_pods.status();
        const bool old_there = old_pods->contains(node) &&
                               (*old_pods)[node]["metadata"].value("uid", "") == old_uid &&
                               !(*old_pods)[node]["metadata"].contains("deletionTimestamp");
        const std::string state = LabelOf(*n, kUpgradeState);
        if (old_there && AnnotationOf(*n, "gpuop.io/driver-pool-target") == "moved" &&
            LabelOf(*n, "gpuop.io/driver.pool") == "default") {
          target_seen_with_old_driver = true;
        }
        if (!old_there && state_when_old_driver_went.empty()) {
          state_when_old_driver_went = state.empty() ? "(none)" : state;
          cordoned_when_old_driver_went = Cordoned(*n);
        }
        if (LabelOf(*n, "gpuop.io/driver.pool") != "moved") return "driver.pool not switched yet";
        if (state != kUpgradeDone) return "state " + state;
        if (!new_pods->contains(node) || !PodRunningAndReady((*new_pods)[node])) {
          return "no Ready gpuop-driver-moved pod on the node";
        }
        if (old_pods->contains(node)) return "the old driver pod is still on the node";
        return "";
      });
  ASSERT_TRUE(moved.ok()) << moved << operator_->LogTail();
  EXPECT_TRUE(target_seen_with_old_driver)
      << "the pool change reached the node as a target while its driver kept running";
  EXPECT_TRUE(state_when_old_driver_went == "pod-restart-required" ||
              state_when_old_driver_went == "validation-required" ||
              state_when_old_driver_went == "uncordon-required" ||
              state_when_old_driver_went == kUpgradeDone)
      << "the old driver went in state " << state_when_old_driver_went;
  EXPECT_TRUE(cordoned_when_old_driver_went || state_when_old_driver_went == kUpgradeDone)
      << "the old driver went on a node still in service";
  absl::StatusOr<Json> n = client_->Get(resources::kNodes, "", node);
  ASSERT_TRUE(n.ok());
  EXPECT_FALSE(Cordoned(*n));
  EXPECT_FALSE(HasAnnotation(*n, "gpuop.io/driver-pool-target"));

  // The pool deleted: its DaemonSet stays while the node still runs its driver, and the node
  // moves back to the policy's driver the same way.
  ASSERT_TRUE(client_->Delete(op::kGpuNodePools, "", "moved").ok());
  bool kept_while_in_use = false;
  const absl::Status back = AwaitDone(
      "the node back on the policy's driver", absl::Minutes(5),
      [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<Json> node_now = client_->Get(resources::kNodes, "", node);
        if (!node_now.ok()) return node_now.status();
        absl::StatusOr<std::map<std::string, Json>> pool_pods = OperandPods("gpuop-driver-moved");
        absl::StatusOr<std::map<std::string, Json>> base_pods = OperandPods("gpuop-driver");
        if (!pool_pods.ok()) return pool_pods.status();
        if (!base_pods.ok()) return base_pods.status();
        if (AnnotationOf(*node_now, "gpuop.io/driver-pool-target") == "default" &&
            pool_pods->contains(node) &&
            client_->Get(resources::kDaemonSets, ns_, "gpuop-driver-moved").ok()) {
          kept_while_in_use = true;
        }
        if (LabelOf(*node_now, "gpuop.io/driver.pool") != "default") return "not switched back yet";
        if (LabelOf(*node_now, kUpgradeState) != kUpgradeDone) {
          return "state " + LabelOf(*node_now, kUpgradeState);
        }
        if (!base_pods->contains(node) || !PodRunningAndReady((*base_pods)[node])) {
          return "no Ready gpuop-driver pod on the node";
        }
        return "";
      });
  ASSERT_TRUE(back.ok()) << back << operator_->LogTail();
  EXPECT_TRUE(kept_while_in_use)
      << "the deleted pool's DaemonSet went before the node had moved off it";
}

}  // namespace gpuop::test
