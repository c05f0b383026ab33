#include "kube/types/selector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuop::kube {
namespace {

using M = std::map<std::string, std::string>;
using ::testing::HasSubstr;

LabelSelector Parse(const char* json) {
  auto s = LabelSelector::FromJson(nlohmann::json::parse(json), "spec.nodeSelector");
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : LabelSelector();
}

TEST(LabelSelectorTest, MatchLabelsAndExpressionsMustAllHold) {
  const LabelSelector s = Parse(R"({"matchLabels": {"pool": "a"},
      "matchExpressions": [{"key": "zone", "operator": "In", "values": ["x", "y"]},
                           {"key": "cordoned", "operator": "DoesNotExist"},
                           {"key": "gpu", "operator": "Exists"},
                           {"key": "tier", "operator": "NotIn", "values": ["web"]}]})");
  EXPECT_TRUE(s.Matches(Labels(M{{"pool", "a"}, {"zone", "x"}, {"gpu", ""}})));
  EXPECT_FALSE(s.Matches(Labels(M{{"pool", "b"}, {"zone", "x"}, {"gpu", ""}})));
  EXPECT_FALSE(s.Matches(Labels(M{{"pool", "a"}, {"zone", "z"}, {"gpu", ""}})));
  EXPECT_FALSE(s.Matches(Labels(M{{"pool", "a"}, {"zone", "x"}})));
  EXPECT_FALSE(s.Matches(Labels(M{{"pool", "a"}, {"zone", "x"}, {"gpu", ""}, {"cordoned", "1"}})));
  EXPECT_FALSE(s.Matches(Labels(M{{"pool", "a"}, {"zone", "x"}, {"gpu", ""}, {"tier", "web"}})));
  EXPECT_EQ(s.ToString(), "pool=a,zone in (x,y),!cordoned,gpu,tier notin (web)");
}

TEST(LabelSelectorTest, EmptySelectsEverything) {
  EXPECT_TRUE(Parse("{}").Matches(Labels(std::map<std::string, std::string>{{"a", "b"}})));
  EXPECT_TRUE(Parse("{}").Empty());
}

TEST(LabelSelectorTest, ErrorsNameTheField) {
  auto bad = LabelSelector::FromJson(
      nlohmann::json::parse(R"({"matchExpressions": [{"key": "a", "operator": "Near"}]})"),
      "spec.nodeSelector");
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("spec.nodeSelector.matchExpressions[0].operator: \"Near\" is not In"));
  auto novalues = LabelSelector::FromJson(
      nlohmann::json::parse(R"({"matchExpressions": [{"key": "a", "operator": "In"}]})"), "s");
  EXPECT_THAT(std::string(novalues.status().message()), HasSubstr("In and NotIn need values"));
}

}  // namespace
}  // namespace gpuop::kube
