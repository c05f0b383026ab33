// Act 4: a node with a running driver moves to a GPUNodePool of its own driver version, and back
// when the pool is deleted. The DaemonSet controller would kill its driver at once if its
// gpuop.io/driver.pool label changed (or its DaemonSet went); the operator keeps the label and the
// DaemonSet, records the target, and the upgrade switches the label. With automatic upgrades off
// the node must hold there, its old driver running: a state the test can check at leisure, rather
// than a moment it could miss.
#include <string>

#include "absl/strings/str_cat.h"
#include "test/e2e/operator_e2e_test.h"

namespace gpuop::test {
namespace {

constexpr char kPoolLabel[] = "e2e.gpuop.io/pool";

}  // namespace

void OperatorE2eTest::SetAutoUpgrade(bool on) {
  ASSERT_TRUE(client_
                  ->Patch(kPolicies, "", "default", kube::PatchType::kMergePatch,
                          {{"spec", {{"upgrade", {{"autoUpgrade", on}}}}}})
                  .ok());
}

void OperatorE2eTest::MoveAndHold(const std::string& node, const std::string& from_ds,
                                  const std::string& to_pool, const std::string& to_ds,
                                  const std::function<void()>& change) {
  absl::StatusOr<std::map<std::string, Json>> before = OperandPods(from_ds);
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_TRUE(before->contains(node)) << "no " << from_ds << " pod on " << node;
  const std::string old_uid = (*before)[node]["metadata"].value("uid", "");

  ASSERT_NO_FATAL_FAILURE(SetAutoUpgrade(false));
  change();
  // Held: the node waits in upgrade-required for the move, its driver untouched.
  const absl::Status held =
      AwaitDone(absl::StrCat("the move to ", to_pool, " held"), absl::Minutes(2),
                [&]() -> absl::StatusOr<std::string> {
                  absl::StatusOr<Json> n = client_->Get(resources::kNodes, "", node);
                  if (!n.ok()) return n.status();
                  if (AnnotationOf(*n, "gpuop.io/driver-pool-target") != to_pool)
                    return "no target yet";
                  if (LabelOf(*n, kUpgradeState) != "upgrade-required" ||
                      AnnotationOf(*n, kUpgradeMessage).find("automatic upgrades are off") ==
                          std::string::npos) {
                    return absl::StrCat("state ", LabelOf(*n, kUpgradeState), ": ",
                                        AnnotationOf(*n, kUpgradeMessage));
                  }
                  return "";
                });
  ASSERT_TRUE(held.ok()) << held << operator_->LogTail();
  absl::StatusOr<Json> n = client_->Get(resources::kNodes, "", node);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_NE(LabelOf(*n, "gpuop.io/driver.pool"), to_pool) << "the label switched at once";
  EXPECT_TRUE(client_->Get(resources::kDaemonSets, ns_, from_ds).ok())
      << from_ds << " went while the node still runs it";
  absl::StatusOr<std::map<std::string, Json>> during = OperandPods(from_ds);
  ASSERT_TRUE(during.ok()) << during.status();
  ASSERT_TRUE(during->contains(node)) << "the old driver pod went before the upgrade ran";
  EXPECT_EQ((*during)[node]["metadata"].value("uid", ""), old_uid);
  EXPECT_FALSE((*during)[node]["metadata"].contains("deletionTimestamp"));

  // Released: the upgrade moves the node.
  ASSERT_NO_FATAL_FAILURE(SetAutoUpgrade(true));
  const absl::Status moved = AwaitDone(
      absl::StrCat("the node on ", to_ds), absl::Minutes(5), [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<Json> now = client_->Get(resources::kNodes, "", node);
        if (!now.ok()) return now.status();
        if (LabelOf(*now, "gpuop.io/driver.pool") != to_pool) return "driver.pool not switched";
        if (LabelOf(*now, kUpgradeState) != kUpgradeDone)
          return "state " + LabelOf(*now, kUpgradeState);
        if (Cordoned(*now)) return "still cordoned";
        absl::StatusOr<std::map<std::string, Json>> pods = OperandPods(to_ds);
        if (!pods.ok()) return pods.status();
        if (!pods->contains(node) || !PodRunningAndReady((*pods)[node])) {
          return absl::StrCat("no Ready ", to_ds, " pod on the node");
        }
        return "";
      });
  ASSERT_TRUE(moved.ok()) << moved << operator_->LogTail();
  absl::StatusOr<Json> after = client_->Get(resources::kNodes, "", node);
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE(HasAnnotation(*after, "gpuop.io/driver-pool-target"));
  absl::StatusOr<std::map<std::string, Json>> old_pods = OperandPods(from_ds);
  ASSERT_TRUE(old_pods.ok());
  EXPECT_FALSE(old_pods->contains(node)) << "the old driver pod is still on the node";
}

void OperatorE2eTest::MoveANodeToAPool() {
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

  // Into a pool with a driver of its own.
  ASSERT_NO_FATAL_FAILURE(
      MoveAndHold(node, "gpuop-driver-debian12", "moved", "gpuop-driver-moved-debian12", [&] {
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
      }));
  // Back when the pool is deleted: its DaemonSet stays until the node has left it.
  ASSERT_NO_FATAL_FAILURE(
      MoveAndHold(node, "gpuop-driver-moved-debian12", "default", "gpuop-driver-debian12",
                  [&] { ASSERT_TRUE(client_->Delete(op::kGpuNodePools, "", "moved").ok()); }));
}

}  // namespace gpuop::test
