#include "operator/nodes/startup_taint.h"

#include <gtest/gtest.h>

namespace gpuop::op {
namespace {

kube::Node Tainted() {
  kube::Node n;
  n.metadata.name = "gpu-1";
  n.metadata.resource_version = "42";
  n.taints = {{.key = "dedicated", .value = "ml", .effect = "NoSchedule"},
              {.key = kAutoscalerStartupTaintKey, .value = "true", .effect = "NoSchedule"},
              {.key = kStartupTaintKey, .effect = "NoSchedule"}};
  return n;
}

TEST(StartupTaintTest, RemovalKeepsEveryOtherTaintAndIsGuardedByTheResourceVersion) {
  const kube::Node node = Tainted();
  ASSERT_TRUE(HasStartupTaint(node));
  std::optional<nlohmann::json> patch = StartupTaintRemoval(node);
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ((*patch)["metadata"]["resourceVersion"], "42");
  EXPECT_EQ((*patch)["spec"]["taints"],
            (nlohmann::json{{{"key", "dedicated"}, {"effect", "NoSchedule"}, {"value", "ml"}}}));
  kube::Node clean;
  EXPECT_FALSE(StartupTaintRemoval(clean).has_value());
}

TEST(StartupTaintTest, ReadyMeansValidatedWhereTheValidatorRuns) {
  PolicySpec policy;  // the validator is on by default
  kube::Node node = Tainted();
  node.allocatable = kube::Labels(std::map<std::string, std::string>{{"nvidia.com/gpu", "8"}});
  EXPECT_FALSE(GpuStackReady(node, policy)) << "GPUs advertised but not validated yet";
  node.conditions.push_back({.type = "GPUValidated", .status = "False"});
  EXPECT_FALSE(GpuStackReady(node, policy));
  node.conditions.back().status = "True";
  EXPECT_TRUE(GpuStackReady(node, policy));
}

TEST(StartupTaintTest, WithoutTheValidatorAnAdvertisedGpuIsReady) {
  PolicySpec policy;
  policy.components.validator = false;
  kube::Node node = Tainted();
  node.allocatable =
      kube::Labels(std::map<std::string, std::string>{{"cpu", "64"}, {"nvidia.com/gpu", "0"}});
  EXPECT_FALSE(GpuStackReady(node, policy));
  node.allocatable =
      kube::Labels(std::map<std::string, std::string>{{"cpu", "64"}, {"amd.com/gpu", "8"}});
  EXPECT_TRUE(GpuStackReady(node, policy));
}

}  // namespace
}  // namespace gpuop::op
