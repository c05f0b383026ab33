// Act 4: a node with a running driver moves to a GPUNodePool of its own driver version, and back
// when the pool is deleted; then to another OS's driver image (its OS upgraded, as NFD labels it)
// and back; then its operands are turned off and its driver leaves the same way. The DaemonSet
// controller would kill its driver at once if its gpuop.io/driver.pool or
// gpuop.io/driver.os label changed (or its DaemonSet went); the operator keeps the label and the
// DaemonSet, records the target, and the upgrade switches the label. With automatic upgrades off
// the node must hold there, its old driver running: a state the test can check at leisure, rather
// than a moment it could miss.
#include <string>

#include "absl/strings/str_cat.h"
#include "test/e2e/operator_e2e_test.h"

namespace gpuop::test {
namespace {

constexpr char kPoolLabel[] = "e2e.gpuop.io/pool";
constexpr char kNfdOsVersion[] = "feature.node.kubernetes.io/system-os_release.VERSION_ID";

}  // namespace

OperatorE2eTest::DriverMove OperatorE2eTest::ToPool(const std::string& pool,
                                                    const std::string& ds) {
  return {.label = "gpuop.io/driver.pool",
          .annotation = "gpuop.io/driver-pool-target",
          .to = pool,
          .to_ds = ds};
}

OperatorE2eTest::DriverMove OperatorE2eTest::ToOs(const std::string& os, const std::string& ds) {
  return {.label = "gpuop.io/driver.os",
          .annotation = "gpuop.io/driver-os-target",
          .to = os,
          .to_ds = ds};
}

void OperatorE2eTest::SetAutoUpgrade(bool on) {
  ASSERT_TRUE(client_
                  ->Patch(kPolicies, "", "default", kube::PatchType::kMergePatch,
                          {{"spec", {{"upgrade", {{"autoUpgrade", on}}}}}})
                  .ok());
}

void OperatorE2eTest::MoveAndHold(const std::string& node, const std::string& from_ds,
                                  const DriverMove& move, const std::function<void()>& change) {
  const std::string& to_pool = move.to;
  const std::string& to_ds = move.to_ds;
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
                  if (AnnotationOf(*n, move.annotation) != to_pool) return "no target yet";
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
  EXPECT_NE(LabelOf(*n, move.label), to_pool) << "the label switched at once";
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
        if (LabelOf(*now, move.label) != to_pool) return move.label + " not switched";
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
  EXPECT_FALSE(HasAnnotation(*after, move.annotation));
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
  ASSERT_NO_FATAL_FAILURE(MoveAndHold(
      node, "gpuop-driver-debian12", ToPool("moved", "gpuop-driver-moved-debian12"), [&] {
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
      MoveAndHold(node, "gpuop-driver-moved-debian12", ToPool("default", "gpuop-driver-debian12"),
                  [&] { ASSERT_TRUE(client_->Delete(op::kGpuNodePools, "", "moved").ok()); }));
  // The node's OS upgraded (NFD relabels it): a DaemonSet for Debian 13 appears and the node's
  // driver moves to it; the Debian 12 DaemonSet keeps the other nodes.
  const auto set_os_version = [&](const char* version) {
    ASSERT_TRUE(client_
                    ->Patch(resources::kNodes, "", node, kube::PatchType::kMergePatch,
                            {{"metadata", {{"labels", {{kNfdOsVersion, version}}}}}})
                    .ok());
  };
  ASSERT_NO_FATAL_FAILURE(MoveAndHold(node, "gpuop-driver-debian12",
                                      ToOs("debian13", "gpuop-driver-debian13"),
                                      [&] { set_os_version("13"); }));
  EXPECT_TRUE(client_->Get(resources::kDaemonSets, ns_, "gpuop-driver-debian12").ok())
      << "the other nodes' DaemonSet went";
  // And back: the Debian 13 DaemonSet goes once no node runs it.
  ASSERT_NO_FATAL_FAILURE(MoveAndHold(node, "gpuop-driver-debian13",
                                      ToOs("debian12", "gpuop-driver-debian12"),
                                      [&] { set_os_version("12"); }));
  const absl::Status pruned = AwaitDone(
      "gpuop-driver-debian13 pruned", absl::Minutes(2), [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<Json> ds =
            client_->Get(resources::kDaemonSets, ns_, "gpuop-driver-debian13");
        if (ds.ok()) return "still there";
        return absl::IsNotFound(ds.status()) ? absl::StatusOr<std::string>("") : ds.status();
      });
  EXPECT_TRUE(pruned.ok()) << pruned;

  // Operands turned off on the node: every component but the driver goes at once, the driver
  // through the upgrade (gpuop.io/driver-removal), its pod untouched while upgrades are off.
  absl::StatusOr<std::map<std::string, Json>> before = OperandPods("gpuop-driver-debian12");
  ASSERT_TRUE(before.ok() && before->contains(node));
  const std::string driver_uid = (*before)[node]["metadata"].value("uid", "");
  const auto set_operands = [&](const Json& value) {
    ASSERT_TRUE(client_
                    ->Patch(resources::kNodes, "", node, kube::PatchType::kMergePatch,
                            {{"metadata", {{"labels", {{"gpuop.io/deploy.operands", value}}}}}})
                    .ok());
  };
  ASSERT_NO_FATAL_FAILURE(SetAutoUpgrade(false));
  ASSERT_NO_FATAL_FAILURE(set_operands("false"));
  const absl::Status held = AwaitDone(
      "the driver's removal held", absl::Minutes(2), [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<Json> n = client_->Get(resources::kNodes, "", node);
        if (!n.ok()) return n.status();
        if (AnnotationOf(*n, "gpuop.io/driver-removal") != "operands-disabled") return "no removal";
        if (LabelOf(*n, kUpgradeState) != "upgrade-required")
          return "state " + LabelOf(*n, kUpgradeState);
        return "";
      });
  ASSERT_TRUE(held.ok()) << held << operator_->LogTail();
  absl::StatusOr<std::map<std::string, Json>> during = OperandPods("gpuop-driver-debian12");
  ASSERT_TRUE(during.ok() && during->contains(node)) << "the driver went before the upgrade ran";
  EXPECT_EQ((*during)[node]["metadata"].value("uid", ""), driver_uid);
  EXPECT_FALSE((*during)[node]["metadata"].contains("deletionTimestamp"));
  ASSERT_NO_FATAL_FAILURE(SetAutoUpgrade(true));
  const absl::Status removed =
      AwaitDone("the driver off the node", absl::Minutes(5), [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<Json> n = client_->Get(resources::kNodes, "", node);
        if (!n.ok()) return n.status();
        absl::StatusOr<std::map<std::string, Json>> pods = OperandPods("gpuop-driver-debian12");
        if (!pods.ok()) return pods.status();
        if (pods->contains(node)) return "the driver pod is still there";
        if (LabelOf(*n, kUpgradeState) != kUpgradeDone)
          return "state " + LabelOf(*n, kUpgradeState);
        if (HasAnnotation(*n, "gpuop.io/driver-removal")) return "the removal annotation is left";
        if (Cordoned(*n)) return "still cordoned";
        return "";
      });
  ASSERT_TRUE(removed.ok()) << removed << operator_->LogTail();
  // Operands back on: the driver returns.
  ASSERT_NO_FATAL_FAILURE(set_operands(nullptr));
  const absl::Status back = AwaitDone(
      "the driver back on the node", absl::Minutes(3), [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<std::map<std::string, Json>> pods = OperandPods("gpuop-driver-debian12");
        if (!pods.ok()) return pods.status();
        if (!pods->contains(node) || !PodRunningAndReady((*pods)[node]))
          return "no Ready driver pod";
        return "";
      });
  EXPECT_TRUE(back.ok()) << back << operator_->LogTail();
}

}  // namespace gpuop::test
