#include "operator/uninstall/node_cleanup.h"

#include <gtest/gtest.h>

namespace gpuop::op::uninstall {
namespace {

using Json = nlohmann::json;

TEST(NodeCleanupTest, RemovesGpuopLabelsAnnotationsTaintsAndItsOwnCordon) {
  const Json node = Json::parse(R"({
    "metadata": {
      "name": "gpu-1",
      "labels": {"kubernetes.io/hostname": "gpu-1", "gpuop.io/managed": "true",
                 "gpuop.io/driver-upgrade-state": "upgrade-required",
                 "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "team": "ml"},
      "annotations": {"gpuop.io/driver-upgrade-since": "2026-01-01T00:00:00Z", "note": "x"},
      "managedFields": [
        {"manager": "gpuop-agent-labels",
         "fieldsV1": {"f:metadata": {"f:labels": {"f:nvidia.com/gpu.product": {}}}}},
        {"manager": "kubectl",
         "fieldsV1": {"f:metadata": {"f:labels": {"f:team": {}}}}}]},
    "spec": {"unschedulable": true,
             "taints": [{"key": "gpuop.io/remediation", "effect": "NoSchedule"},
                        {"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]}})");
  const std::optional<Json> patch = NodeCleanupPatch(node);
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ((*patch)["metadata"]["labels"],
            Json::parse(R"({"gpuop.io/managed": null, "gpuop.io/driver-upgrade-state": null,
                            "nvidia.com/gpu.product": null})"));
  EXPECT_EQ((*patch)["metadata"]["annotations"],
            Json::parse(R"({"gpuop.io/driver-upgrade-since": null})"));
  EXPECT_EQ((*patch)["spec"]["taints"],
            Json::parse(R"([{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}])"));
  EXPECT_EQ((*patch)["spec"]["unschedulable"], false);
}

TEST(NodeCleanupTest, ACordonThatWasThereBeforeStays) {
  const Json node = Json::parse(R"({
    "metadata": {"name": "n", "labels": {"gpuop.io/driver-upgrade-state": "cordon-required"},
                 "annotations": {"gpuop.io/cordoned-before": "true"}},
    "spec": {"unschedulable": true}})");
  const std::optional<Json> patch = NodeCleanupPatch(node);
  ASSERT_TRUE(patch.has_value());
  EXPECT_FALSE(patch->contains("spec")) << patch->dump();
  EXPECT_TRUE(patch->contains("metadata")) << "the state label still goes";
  // A cordon with no gpuop state is the user's.
  const Json users = Json::parse(R"({"metadata": {"name": "n"}, "spec": {"unschedulable": true}})");
  EXPECT_FALSE(NodeCleanupPatch(users).has_value());
}

TEST(NodeCleanupTest, NothingOfGpuopIsNoPatchAndMalformedFieldsAreLeftAlone) {
  EXPECT_FALSE(NodeCleanupPatch(Json::parse(R"({"metadata": {"name": "cpu-1",
      "labels": {"kubernetes.io/os": "linux"}}})"))
                   .has_value());
  EXPECT_FALSE(NodeCleanupPatch(Json::parse(R"({"metadata": {"labels": 7,
      "annotations": [1], "managedFields": {"x": 1}}, "spec": {"taints": "no"}})"))
                   .has_value());
  EXPECT_FALSE(NodeCleanupPatch(Json(nullptr)).has_value());
  EXPECT_FALSE(
      NodeCleanupPatch(Json::parse(R"({"spec": {"taints": [1, {"key": 2}]}})")).has_value());
}

}  // namespace
}  // namespace gpuop::op::uninstall
