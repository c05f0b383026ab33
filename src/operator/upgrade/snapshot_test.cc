#include "operator/upgrade/snapshot.h"

#include <gtest/gtest.h>

namespace gpuop::op::upgrade {
namespace {

nlohmann::json PodObject(nlohmann::json spec) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", "p"}, {"namespace", "work"}, {"uid", "u1"}}},
          {"spec", std::move(spec)},
          {"status", {{"phase", "Running"}}}};
}

PodInfo Info(const nlohmann::json& object) {
  absl::StatusOr<PodInfo> info = PodInfoFromJson(object);
  EXPECT_TRUE(info.ok()) << info.status();
  return info.ok() ? *info : PodInfo{};
}

TEST(PodInfoTest, GpuPodsAreThoseAskingForNvidiaOrAmdResources) {
  auto limits = [](nlohmann::json l) {
    return PodObject({{"containers", {{{"name", "c"}, {"resources", {{"limits", l}}}}}}});
  };
  EXPECT_TRUE(Info(limits({{"nvidia.com/gpu", "1"}})).uses_gpu);
  EXPECT_TRUE(Info(limits({{"nvidia.com/mig-1g.10gb", 2}})).uses_gpu);
  EXPECT_TRUE(Info(limits({{"amd.com/gpu", "1"}})).uses_gpu);
  EXPECT_FALSE(Info(limits({{"nvidia.com/gpu", "0"}})).uses_gpu);
  EXPECT_FALSE(Info(limits({{"cpu", "4"}})).uses_gpu);
  EXPECT_TRUE(
      Info(PodObject({{"initContainers",
                       {{{"name", "i"}, {"resources", {{"requests", {{"nvidia.com/gpu", "1"}}}}}}}},
                      {"containers", {{{"name", "c"}}}}}))
          .uses_gpu);
}

TEST(PodInfoTest, ReadsWhatDrainAndDeletionNeed) {
  nlohmann::json object = PodObject(
      {{"containers", {{{"name", "c"}}}}, {"volumes", {{{"name", "scratch"}, {"emptyDir", {}}}}}});
  object["metadata"]["labels"] = {{"app.kubernetes.io/managed-by", "gpuop-operator"}};
  object["metadata"]["annotations"] = {{"kubernetes.io/config.mirror", "abc"}};
  object["metadata"]["deletionTimestamp"] = "2026-01-02T03:04:05Z";
  object["metadata"]["ownerReferences"] = {{{"apiVersion", "apps/v1"},
                                            {"kind", "DaemonSet"},
                                            {"name", "d"},
                                            {"uid", "x"},
                                            {"controller", true}}};
  const PodInfo info = Info(object);
  EXPECT_EQ(info.Key(), "work/p");
  EXPECT_EQ(info.uid, "u1");
  EXPECT_TRUE(info.empty_dir);
  EXPECT_TRUE(info.operand);
  EXPECT_TRUE(info.mirror);
  EXPECT_TRUE(info.terminating);
  EXPECT_TRUE(info.controlled);
  EXPECT_TRUE(info.daemon_set);
  EXPECT_FALSE(info.Finished());

  // The chart's operator pod is gpuop's own too: no drain evicts the operator doing it.
  nlohmann::json chart = PodObject({{"containers", {{{"name", "operator"}}}}});
  chart["metadata"]["labels"] = {{"app.kubernetes.io/managed-by", "Helm"},
                                 {"app.kubernetes.io/part-of", "gpuop"}};
  EXPECT_TRUE(Info(chart).operand);

  const PodInfo bare = Info(PodObject({{"containers", {{{"name", "c"}}}}}));
  EXPECT_FALSE(bare.empty_dir || bare.operand || bare.mirror || bare.terminating ||
               bare.controlled || bare.daemon_set);
}

kube::Node NodeWith(std::map<std::string, std::string> labels,
                    std::map<std::string, std::string> annotations) {
  kube::Node node;
  node.metadata.name = "n";
  node.metadata.uid = "uid-n";
  node.metadata.labels = kube::Labels(labels);
  node.metadata.annotations = kube::Labels(annotations);
  return node;
}

TEST(DescribeNodeTest, ReadsTheUpgradeLabelsAndAnnotations) {
  kube::Node node = NodeWith({{"gpuop.io/managed", "true"},
                              {"gpuop.io/driver-upgrade-state", "drain-required"},
                              {"gpuop.io/driver.pool", "h100"}},
                             {{"gpuop.io/driver-upgrade-since", "2026-01-02T03:04:05Z"},
                              {"gpuop.io/driver-upgrade-message", "evicting"},
                              {"gpuop.io/cordoned-before", "true"}});
  node.unschedulable = true;
  node.conditions = {{.type = "Ready", .status = "True"}};
  const NodeSnapshot n = DescribeNode(node);
  EXPECT_TRUE(IsManagedNode(node));
  EXPECT_EQ(n.name, "n");
  EXPECT_EQ(n.uid, "uid-n");
  EXPECT_EQ(n.state_label, "drain-required");
  EXPECT_EQ(n.since, *kube::ParseTimestamp("2026-01-02T03:04:05Z"));
  EXPECT_EQ(n.message, "evicting");
  EXPECT_TRUE(n.cordoned_before);
  EXPECT_TRUE(n.unschedulable);
  EXPECT_TRUE(n.ready);
  EXPECT_FALSE(n.skip);
  EXPECT_FALSE(n.host_driver);
  EXPECT_EQ(n.driver_daemon_set, "gpuop-driver-h100");
}

TEST(DescribeNodeTest, SkipHostDriverAndDefaultPool) {
  EXPECT_TRUE(DescribeNode(NodeWith({{"gpuop.io/driver-upgrade.skip", "true"}}, {})).skip);
  EXPECT_TRUE(DescribeNode(NodeWith({{"gpuop.io/deploy.driver", "host-driver"}}, {})).host_driver);
  EXPECT_TRUE(DescribeNode(NodeWith({{"gpuop.io/driver.preinstalled", "true"}}, {})).host_driver);
  const NodeSnapshot amd =
      DescribeNode(NodeWith({{"gpuop.io/deploy.driver", "not-applicable"}}, {}));
  EXPECT_TRUE(amd.no_driver);
  EXPECT_TRUE(amd.Excluded());
  EXPECT_FALSE(DescribeNode(NodeWith({{"gpuop.io/deploy.driver", "true"}}, {})).Excluded());
  const NodeSnapshot plain = DescribeNode(
      NodeWith({{"gpuop.io/driver.pool", "default"}}, {{"gpuop.io/driver-upgrade-since", "junk"}}));
  EXPECT_EQ(plain.driver_daemon_set, "gpuop-driver");
  EXPECT_EQ(plain.since, std::nullopt);
  EXPECT_FALSE(plain.ready);
  EXPECT_FALSE(IsManagedNode(NodeWith({}, {})));
}

}  // namespace
}  // namespace gpuop::op::upgrade
