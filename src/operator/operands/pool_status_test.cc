#include "operator/operands/pool_status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "operator/render/render.h"

namespace gpuop::op {
namespace {

using ::testing::HasSubstr;

std::shared_ptr<const NodeEntry> Node(const std::string& name, const std::string& gpu) {
  auto node = kube::ParseNode(
      {{"metadata",
        {{"name", name}, {"labels", {{kManagedLabel, "true"}, {"example.com/gpu", gpu}}}}}});
  EXPECT_TRUE(node.ok()) << node.status();
  return std::make_shared<NodeEntry>(NodeEntry{.node = *node});
}

NodePool Pool(const std::string& name, const std::string& gpu_value) {
  auto selector =
      kube::LabelSelector::FromJson({{"matchLabels", {{"example.com/gpu", gpu_value}}}}, "sel");
  EXPECT_TRUE(selector.ok()) << selector.status();
  return {.name = name, .generation = 2, .node_selector = *selector, .driver_version = "550.1"};
}

TEST(PoolStatusTest, CountsNodesAndReportsOverlapsOnBothPools) {
  // "h100" and "all-h100" both select node c.
  NodePool h100 = Pool("h100", "h100");
  NodePool a100 = Pool("a100", "a100");
  const auto statuses =
      ComputePoolStatuses({a100, h100}, {Node("a", "a100"), Node("b", "a100"), Node("c", "h100")},
                          {}, absl::FromUnixSeconds(1'800'000'000));
  EXPECT_EQ(statuses.at("a100")["nodes"], 2);
  EXPECT_EQ(statuses.at("a100")["conditions"][0]["status"], "False");  // Conflict
  EXPECT_EQ(statuses.at("h100")["nodes"], 1);

  NodePool overlap = Pool("also-h100", "h100");
  const auto conflicted = ComputePoolStatuses({overlap, h100}, {Node("c", "h100")}, {},
                                              absl::FromUnixSeconds(1'800'000'000));
  for (const char* name : {"also-h100", "h100"}) {
    const nlohmann::json& s = conflicted.at(name);
    EXPECT_EQ(s["conflicts"], nlohmann::json::array({"c"}));
    EXPECT_EQ(s["conditions"][0]["type"], "Conflict");
    EXPECT_EQ(s["conditions"][0]["status"], "True");
    EXPECT_THAT(s["conditions"][0]["message"].get<std::string>(),
                HasSubstr("keep their current configuration"));
    EXPECT_EQ(s["conditions"][1]["status"], "False");  // Ready
  }
  EXPECT_THAT(conflicted.at("h100")["conditions"][0]["message"].get<std::string>(),
              HasSubstr("also selected by also-h100 (c)"));
}

}  // namespace
}  // namespace gpuop::op
