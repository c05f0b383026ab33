#include "common/json_access.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuop::common {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

TEST(JsonAccessTest, ReadsFieldsOfTheRightType) {
  const Json object = {{"s", "text"}, {"i", -7}, {"u", 42u}, {"b", true}, {"o", {{"k", 1}}}};
  EXPECT_EQ(JsonString(object, "s"), "text");
  EXPECT_EQ(JsonInt(object, "i"), -7);
  EXPECT_EQ(JsonInt(object, "u"), 42);
  EXPECT_TRUE(JsonBool(object, "b"));
  EXPECT_EQ(JsonInt(JsonField(object, "o"), "k"), 1);
}

// Each of these throws through nlohmann's value(), at() or get<>().
TEST(JsonAccessTest, WrongTypesAndMissingFieldsGiveTheFallback) {
  const Json object = {{"s", 1}, {"i", "7"}, {"f", 1.5}, {"b", "true"}, {"n", nullptr}};
  EXPECT_EQ(JsonString(object, "s", "none"), "none");
  EXPECT_EQ(JsonInt(object, "i", -1), -1);
  EXPECT_EQ(JsonInt(object, "f", -1), -1);
  EXPECT_FALSE(JsonBool(object, "b"));
  EXPECT_EQ(JsonString(object, "n"), "");
  EXPECT_EQ(JsonString(object, "absent", "x"), "x");
  EXPECT_TRUE(JsonField(object, "absent").is_null());
  for (const Json& not_object : {Json(1), Json("s"), Json::array({1, 2}), Json()}) {
    EXPECT_TRUE(JsonField(not_object, "s").is_null()) << not_object;
    EXPECT_EQ(JsonString(not_object, "s", "fb"), "fb") << not_object;
    EXPECT_EQ(JsonInt(not_object, "s", 3), 3) << not_object;
  }
}

TEST(JsonAccessTest, IntegersBeyondInt64GiveTheFallback) {
  const Json object = Json::parse(R"({"big": 18446744073709551615, "max": 9223372036854775807,
                                      "min": -9223372036854775808, "huge": 1e300})");
  EXPECT_EQ(JsonInt(object, "big", -1), -1);
  EXPECT_EQ(JsonInt(object, "max"), INT64_MAX);
  EXPECT_EQ(JsonInt(object, "min"), INT64_MIN);
  EXPECT_EQ(JsonInt(object, "huge", -1), -1);
}

TEST(JsonAccessTest, ParseJsonRejectsMalformedTextNamingWhatItWas) {
  for (const char* text : {"", "{", "{\"a\":}", "[1,2", "nul", "{} {}", "\"\\uD800\""}) {
    absl::StatusOr<Json> parsed = ParseJson(text, "annotation gpuop.io/x");
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(parsed.status().message(), HasSubstr("annotation gpuop.io/x: not JSON")) << text;
  }
  absl::StatusOr<Json> ok = ParseJson(R"({"a": [1, {"b": null}]})", "x");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ((*ok)["a"][1], Json({{"b", nullptr}}));
}

TEST(JsonAccessTest, ParseJsonRejectsDeepNesting) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  absl::StatusOr<Json> parsed = ParseJson(deep, "inventory");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.status().message(), HasSubstr("inventory: nests deeper than 64 levels"));
  EXPECT_TRUE(ParseJson(std::string(64, '[') + std::string(64, ']'), "x").ok());
  EXPECT_FALSE(ParseJson(std::string(65, '[') + std::string(65, ']'), "x").ok());
  EXPECT_FALSE(ParseJson(R"({"a":)" + std::string(70, '{') + std::string(71, '}'), "x").ok());
}

}  // namespace
}  // namespace gpuop::common
