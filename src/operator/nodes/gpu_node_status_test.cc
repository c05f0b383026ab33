#include "operator/nodes/gpu_node_status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "operator/api/node_state.h"

namespace gpuop::op {
namespace {

using ::testing::HasSubstr;

kube::Node Parse(const char* json) {
  auto node = kube::ParseNode(nlohmann::json::parse(json));
  EXPECT_TRUE(node.ok()) << node.status();
  return *node;
}

constexpr char kNode[] = R"({
  "metadata": {"name": "gpu-1", "uid": "u-1",
    "labels": {"nvidia.com/gpu.count": "8", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
               "nvidia.com/cuda.driver-version.full": "570.86.15"},
    "annotations": {"gpuop.io/gpu-inventory":
      "{\"driver\":\"570.86.15\",\"cuda\":\"12.8\",\"gpus\":[{\"index\":0,\"uuid\":\"GPU-a\",\"memoryMiB\":81559,\"pciBusId\":\"0000:17:00.0\",\"migEnabled\":false,\"migDevices\":[]}]}"}},
  "status": {"conditions": [
    {"type": "Ready", "status": "True"},
    {"type": "GPUHealthy", "status": "False", "reason": "XidError",
     "message": "1 of 8 GPUs unhealthy: GPU 3: XID 79", "lastTransitionTime": "2026-11-29T10:00:00Z"},
    {"type": "GPURecoveryAction", "status": "True", "reason": "RebootNode",
     "message": "RebootNode for GPU 3, XID 79"}]}})";

TEST(GpuNodeStatusTest, InventoryDriverAndHealthComeFromTheNode) {
  PolicySpec policy;
  policy.driver.version = "570.86.15";
  const nlohmann::json s =
      GpuNodeStatus(Parse(kNode), &policy, "", {{.name = "device-plugin", .state = "Ready"}});
  EXPECT_EQ(s["vendor"], "nvidia");
  EXPECT_EQ(s["gpuCount"], 8);
  EXPECT_EQ(s["product"], "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(s["pool"], "default");
  EXPECT_EQ(s["gpus"][0]["uuid"], "GPU-a");
  EXPECT_EQ(s["driver"]["version"], "570.86.15");
  EXPECT_EQ(s["driver"]["source"], "container");
  EXPECT_EQ(s["driver"]["cudaVersion"], "12.8");
  EXPECT_EQ(s["health"]["state"], "Unhealthy");
  EXPECT_EQ(s["health"]["reason"], "XidError");
  EXPECT_EQ(s["health"]["since"], "2026-11-29T10:00:00Z");
  EXPECT_EQ(s["health"]["requiredAction"], "RebootNode");
  EXPECT_EQ(s["state"], "Ready");
}

TEST(GpuNodeStatusTest, UpgradeRemediationAndComponentsSetTheState) {
  kube::Node node = Parse(kNode);
  auto with = [&](std::map<std::string, std::string> extra) {
    std::map<std::string, std::string> labels = node.metadata.labels.ToMap();
    for (auto& [k, v] : extra) labels[k] = v;
    kube::Node n = node;
    n.metadata.labels = kube::Labels(labels);
    return n;
  };
  EXPECT_EQ(GpuNodeStatus(with({{kUpgradeStateLabel, "drain-required"}}), nullptr, "", {})["state"],
            "Upgrading");
  EXPECT_EQ(GpuNodeStatus(with({{kUpgradeStateLabel, "drain-required"}}), nullptr, "", {},
                          "580.65.06")["upgrade"]["targetVersion"],
            "580.65.06");
  const nlohmann::json nouveau = GpuNodeStatus(with({{"gpuop.io/nouveau.loaded", "true"}}), nullptr,
                                               "", {{.name = "driver", .state = "NotReady"}});
  EXPECT_EQ(nouveau["conditions"][0]["type"], "NouveauLoaded");
  EXPECT_FALSE(GpuNodeStatus(with({{"gpuop.io/nouveau.loaded", "true"}}), nullptr, "",
                             {{.name = "driver", .state = "Ready"}})
                   .contains("conditions"))
      << "a Ready driver container says nouveau is no longer in the way";
  EXPECT_EQ(GpuNodeStatus(with({{kUpgradeStateLabel, "upgrade-failed"}}), nullptr, "", {})["state"],
            "UpgradeFailed");
  EXPECT_EQ(
      GpuNodeStatus(with({{kRemediationStateLabel, "in-progress"}}), nullptr, "", {})["state"],
      "Remediating");
  EXPECT_EQ(GpuNodeStatus(with({{"gpuop.io/deploy.operands", "false"}}), nullptr, "", {})["state"],
            "Paused");
  EXPECT_EQ(GpuNodeStatus(node, nullptr, "", {{.name = "exporter", .state = "NotReady"}})["state"],
            "Installing");
  const nlohmann::json host =
      GpuNodeStatus(with({{"gpuop.io/driver.preinstalled", "true"}}), nullptr, "h100", {});
  EXPECT_EQ(host["driver"]["source"], "host");
  EXPECT_EQ(host["pool"], "h100");
}

// Regression: an inventory annotation of the wrong shape threw out of the operator's reconcile.
TEST(GpuNodeStatusTest, AnInvalidInventoryIsReportedNotThrown) {
  kube::Node node = Parse(kNode);
  std::map<std::string, std::string> annotations = node.metadata.annotations.ToMap();
  annotations["gpuop.io/gpu-inventory"] = R"({"driver":1})";
  node.metadata.annotations = kube::Labels(annotations);
  const nlohmann::json s = GpuNodeStatus(node, nullptr, "", {});
  EXPECT_EQ(s["gpus"], nlohmann::json::array());
  EXPECT_EQ(s["driver"]["version"], "570.86.15");  // from the node's label
  ASSERT_EQ(s["conditions"].size(), 1);
  EXPECT_EQ(s["conditions"][0]["type"], "InventoryValid");
  EXPECT_EQ(s["conditions"][0]["status"], "False");
  EXPECT_EQ(s["conditions"][0]["reason"], "InvalidAnnotation");
  EXPECT_THAT(s["conditions"][0]["message"].get<std::string>(),
              HasSubstr("gpuop.io/gpu-inventory: driver: must be a string"));
  EXPECT_FALSE(GpuNodeStatus(Parse(kNode), nullptr, "", {}).contains("conditions"));
}

TEST(GpuNodeStatusTest, AHugeGpuCountLabelIsZero) {
  kube::Node node = Parse(kNode);
  std::map<std::string, std::string> labels = node.metadata.labels.ToMap();
  labels["nvidia.com/gpu.count"] = "99999999999999999999";
  node.metadata.labels = kube::Labels(labels);
  EXPECT_EQ(GpuNodeStatus(node, nullptr, "", {})["gpuCount"], 0);
}

TEST(GpuNodeStatusTest, TheGpuNodeBelongsToItsNode) {
  const nlohmann::json o = GpuNodeObject(Parse(kNode));
  EXPECT_EQ(o["metadata"]["name"], "gpu-1");
  EXPECT_EQ(o["metadata"]["ownerReferences"][0]["kind"], "Node");
  EXPECT_EQ(o["metadata"]["ownerReferences"][0]["uid"], "u-1");
}

}  // namespace
}  // namespace gpuop::op
