#include "kube/types/labels.h"

#include <gtest/gtest.h>

namespace gpuop::kube {
namespace {

TEST(InternedStringTest, EqualStringsShareStorage) {
  InternedString a("nvidia.com/gpu.product");
  InternedString b(std::string("nvidia.com/") + "gpu.product");
  EXPECT_EQ(&a.str(), &b.str());
  EXPECT_EQ(a, b);
  EXPECT_EQ(InternedString().str(), "");
}

TEST(InternedStringTest, LongStringsAreOwnedNotPooled) {
  const size_t before = InternedStringCount();
  const std::string long_value(InternedString::kMaxInternedSize + 1, 'x');
  InternedString a(long_value);
  InternedString b(long_value);
  EXPECT_EQ(a.str(), long_value);
  EXPECT_NE(&a.str(), &b.str());
  EXPECT_EQ(a, b);
  EXPECT_EQ(InternedStringCount(), before);
}

TEST(LabelsTest, LookupAndRoundTrip) {
  const nlohmann::json json = {{"b", "2"}, {"a", "1"}, {"n", 3}};
  Labels labels = Labels::FromJson(json);
  EXPECT_EQ(labels.size(), 2u);  // The number is not a label.
  EXPECT_EQ(labels.Get("a"), "1");
  EXPECT_EQ(labels.Get("b"), "2");
  EXPECT_FALSE(labels.Get("c").has_value());
  EXPECT_TRUE(labels.Has("a"));
  EXPECT_EQ(labels.ToJson(), (nlohmann::json{{"a", "1"}, {"b", "2"}}));
  EXPECT_EQ(labels, Labels({{"a", "1"}, {"b", "2"}}));
  EXPECT_EQ(Labels::FromJson(nlohmann::json()).size(), 0u);
}

}  // namespace
}  // namespace gpuop::kube
