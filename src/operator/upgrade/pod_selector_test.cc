#include "operator/upgrade/pod_selector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuop::op::upgrade {
namespace {

using ::testing::HasSubstr;

bool Matches(const char* selector, std::map<std::string, std::string> labels) {
  absl::StatusOr<kube::LabelSelector> s = ParsePodSelector(selector, "f");
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() && s->Matches(kube::Labels(labels));
}

TEST(PodSelectorTest, Equality) {
  EXPECT_TRUE(Matches("app=train", {{"app", "train"}}));
  EXPECT_TRUE(Matches("app == train", {{"app", "train"}}));
  EXPECT_FALSE(Matches("app=train", {{"app", "web"}}));
  EXPECT_FALSE(Matches("app=train", {}));
  EXPECT_TRUE(Matches("app!=train", {{"app", "web"}}));
  EXPECT_TRUE(Matches("app!=train", {}));
  EXPECT_FALSE(Matches("app!=train", {{"app", "train"}}));
}

TEST(PodSelectorTest, SetsAndExistence) {
  EXPECT_TRUE(Matches("tier in (batch, train)", {{"tier", "train"}}));
  EXPECT_FALSE(Matches("tier in (batch,train)", {{"tier", "web"}}));
  EXPECT_TRUE(Matches("tier notin (web)", {{"tier", "train"}}));
  EXPECT_TRUE(Matches("example.com/gpu", {{"example.com/gpu", ""}}));
  EXPECT_FALSE(Matches("example.com/gpu", {}));
  EXPECT_TRUE(Matches("!spot", {}));
  EXPECT_FALSE(Matches("!spot", {{"spot", "true"}}));
}

TEST(PodSelectorTest, AllTermsMustHold) {
  EXPECT_TRUE(Matches("app=train,tier in (a,b),!spot", {{"app", "train"}, {"tier", "b"}}));
  EXPECT_FALSE(
      Matches("app=train,tier in (a,b),!spot", {{"app", "train"}, {"tier", "b"}, {"spot", "1"}}));
}

TEST(PodSelectorTest, EmptyMatchesEverything) {
  EXPECT_TRUE(Matches("", {{"x", "y"}}));
  EXPECT_TRUE(Matches("  ", {}));
}

TEST(PodSelectorTest, MalformedSelectorsNameTheFieldAndTheTerm) {
  for (const char* bad : {"app in (a", "app in a)", "app=x,,b=c", "a b=c", "app=(x)",
                          "tier within (a)", "app=train,"}) {
    absl::StatusOr<kube::LabelSelector> s = ParsePodSelector(bad, "spec.upgrade.drain.podSelector");
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.status().message(), HasSubstr("spec.upgrade.drain.podSelector: \""));
    EXPECT_THAT(s.status().message(), HasSubstr("is not a label selector"));
  }
}

}  // namespace
}  // namespace gpuop::op::upgrade
