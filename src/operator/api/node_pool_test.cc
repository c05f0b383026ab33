#include "operator/api/node_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuop::op {
namespace {

using ::testing::HasSubstr;

TEST(NodePoolTest, ReadsOverrides) {
  auto p = ParseNodePool(nlohmann::json::parse(R"({
    "metadata": {"name": "h100", "generation": 2},
    "spec": {"nodeSelector": {"matchLabels": {"pool": "h100"}},
             "driver": {"version": "580.65.06"},
             "migLayout": "all-1g.10gb",
             "timeSlicing": {"replicas": 4, "renameByDefault": true}}})"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->name, "h100");
  EXPECT_EQ(p->driver_version, "580.65.06");
  EXPECT_FALSE(p->driver_repository.has_value());
  EXPECT_EQ(p->mig_layout, "all-1g.10gb");
  EXPECT_EQ(p->time_slicing_replicas, 4);
  EXPECT_TRUE(p->time_slicing_rename);
  EXPECT_TRUE(
      p->node_selector.Matches(kube::Labels(std::map<std::string, std::string>{{"pool", "h100"}})));
}

TEST(NodePoolTest, AnEmptySelectorIsRejected) {
  auto p = ParseNodePool(nlohmann::json::parse(
      R"({"metadata": {"name": "all"}, "spec": {"nodeSelector": {}, "migLayout": "x"}})"));
  EXPECT_THAT(std::string(p.status().message()),
              HasSubstr("spec.nodeSelector: must select something"));
  auto q = ParseNodePool(nlohmann::json::parse(
      R"({"metadata": {"name": "p"}, "spec": {"nodeSelector": {"matchLabels": {"a": "b"}},
          "timeSlicing": {"replicas": 1}}})"));
  EXPECT_THAT(std::string(q.status().message()),
              HasSubstr("spec.timeSlicing.replicas: must be an integer from 2 to 64"));
}

TEST(NodePoolTest, ReadsPowerSettings) {
  auto p = ParseNodePool(nlohmann::json::parse(R"({
    "metadata": {"name": "h100"},
    "spec": {"nodeSelector": {"matchLabels": {"pool": "h100"}},
             "power": {"idleAfter": "15m", "floorPercent": 45}}})"));
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(p->power.has_value());
  EXPECT_EQ(p->power->idle_after, absl::Minutes(15));
  EXPECT_EQ(p->power->floor_percent, 45);
  EXPECT_FALSE(p->power->enabled.has_value());
  auto bad = ParseNodePool(nlohmann::json::parse(R"({
    "metadata": {"name": "h100"},
    "spec": {"nodeSelector": {"matchLabels": {"pool": "h100"}}, "power": {"floorPercent": 0}}})"));
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("spec.power.floorPercent: must be an integer from 1 to 100"));
}

}  // namespace
}  // namespace gpuop::op
