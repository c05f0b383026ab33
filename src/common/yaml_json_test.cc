#include "common/yaml_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuop::common {
namespace {

using ::testing::HasSubstr;

TEST(YamlJsonTest, ScalarsFollowTheCoreSchema) {
  auto docs = YamlDocumentsToJson(R"(
a: 1
b: "1"
c: true
d: "True"
e: 1.5
f: 25%
g: ~
h: [x, 2]
i: {status: "True"}
j: 570.86.15
)");
  ASSERT_TRUE(docs.ok()) << docs.status();
  ASSERT_EQ(docs->size(), 1u);
  const nlohmann::json& d = docs->front();
  EXPECT_EQ(d["a"], 1);
  EXPECT_EQ(d["b"], "1");
  EXPECT_EQ(d["c"], true);
  EXPECT_EQ(d["d"], "True");
  EXPECT_EQ(d["e"], 1.5);
  EXPECT_EQ(d["f"], "25%");
  EXPECT_TRUE(d["g"].is_null());
  EXPECT_EQ(d["h"], nlohmann::json::parse(R"(["x", 2])"));
  EXPECT_EQ(d["i"]["status"], "True");
  EXPECT_EQ(d["j"], "570.86.15");
}

TEST(YamlJsonTest, SeveralDocumentsAndErrors) {
  auto docs = YamlDocumentsToJson("a: 1\n---\n---\nb: 2\n");
  ASSERT_TRUE(docs.ok());
  EXPECT_EQ(docs->size(), 2u);
  auto bad = YamlDocumentsToJson("a: [1, 2\n");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("line"));
}

}  // namespace
}  // namespace gpuop::common
