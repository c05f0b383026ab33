#include "operator/nodes/inventory.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuop::op {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

TEST(GpuInventoryTest, ReadsWhatTheAgentWrites) {
  absl::StatusOr<GpuInventory> inv = ParseGpuInventory(
      R"({"driver":"570.86.15","cuda":"12.8","gpus":[{"index":0,"uuid":"GPU-a","product":"H100",
          "memoryMiB":81559,"pciBusId":"0000:17:00.0","migEnabled":true,
          "migDevices":[{"profile":"1g.10gb","uuid":"MIG-1"}],"future":{"x":1}}]})");
  ASSERT_TRUE(inv.ok()) << inv.status();
  EXPECT_EQ(inv->driver, "570.86.15");
  EXPECT_EQ(inv->cuda, "12.8");
  ASSERT_EQ(inv->gpus.size(), 1);
  EXPECT_EQ(inv->gpus[0], Json::parse(R"({"index":0,"uuid":"GPU-a","product":"H100",
      "memoryMiB":81559,"pciBusId":"0000:17:00.0","migEnabled":true,
      "migDevices":[{"profile":"1g.10gb","uuid":"MIG-1"}]})"));
}

TEST(GpuInventoryTest, EveryFieldIsOptional) {
  absl::StatusOr<GpuInventory> inv = ParseGpuInventory(R"({"gpus":[{}]})");
  ASSERT_TRUE(inv.ok()) << inv.status();
  EXPECT_EQ(inv->driver, "");
  EXPECT_EQ(inv->gpus, Json::parse("[{}]"));
  EXPECT_TRUE(ParseGpuInventory("{}").ok());
}

// Hostile annotations: each names the field and the problem, and none throws.
TEST(GpuInventoryTest, WrongTypesRangesAndShapesAreInvalidArgument) {
  struct Case {
    std::string annotation;
    std::string error;
  };
  const Case cases[] = {
      {R"({"driver":1})", "gpuop.io/gpu-inventory: driver: must be a string"},
      {R"({"cuda":["12.8"]})", "cuda: must be a string"},
      {R"({"gpus":{}})", "gpus: must be a list"},
      {R"({"gpus":[1]})", "gpus[0]: must be an object"},
      {R"({"gpus":[{"index":"0"}]})", "gpus[0].index: must be an integer from 0 to 2147483647"},
      {R"({"gpus":[{"index":-1}]})", "gpus[0].index: must be an integer"},
      {R"({"gpus":[{"index":2147483648}]})", "gpus[0].index: must be an integer"},
      {R"({"gpus":[{"index":0.5}]})", "gpus[0].index: must be an integer"},
      {R"({"gpus":[{"memoryMiB":18446744073709551615}]})", "gpus[0].memoryMiB: must be"},
      {R"({"gpus":[{"memoryMiB":1e400}]})", "gpuop.io/gpu-inventory: not JSON"},
      {R"({"gpus":[{"memoryMiB":1e300}]})", "gpus[0].memoryMiB: must be"},
      {R"({"gpus":[{"uuid":null,"product":7}]})", "gpus[0].product: must be a string"},
      {R"({"gpus":[{"migEnabled":"true"}]})", "gpus[0].migEnabled: must be a boolean"},
      {R"({"gpus":[{"migDevices":"1g"}]})", "gpus[0].migDevices: must be a list"},
      {R"({"gpus":[{},{"migDevices":[[]]}]})", "gpus[1].migDevices[0]: must be {profile, uuid}"},
      {R"({"gpus":[{"migDevices":[{"uuid":{}}]}]})", "gpus[0].migDevices[0].uuid: must be"},
      {R"([])", "gpuop.io/gpu-inventory: must be a JSON object"},
      {R"("text")", "must be a JSON object"},
      {"", "gpuop.io/gpu-inventory: not JSON"},
      {"{\"driver\":", "not JSON"},
      {std::string(10000, '['), "nests deeper than"},
      {R"({"gpus":[)" + std::string(5000, '[') + std::string(5000, ']') + "]}",
       "nests deeper than"},
      {[] {
         std::string s;
         for (int i = 0; i < 5000; ++i) s += R"({"a":)";
         return s + "1" + std::string(5000, '}');
       }(),
       "nests deeper than"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<GpuInventory> inv = ParseGpuInventory(c.annotation);
    ASSERT_FALSE(inv.ok()) << c.annotation.substr(0, 80);
    EXPECT_EQ(inv.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(inv.status().message(), HasSubstr(c.error)) << c.annotation.substr(0, 80);
  }
}

TEST(GpuInventoryTest, ListsBeyondTheLimitsAreRejected) {
  Json gpus = Json::array();
  for (size_t i = 0; i <= kMaxInventoryGpus; ++i) gpus.push_back(Json::object());
  absl::StatusOr<GpuInventory> inv = ParseGpuInventory(Json{{"gpus", gpus}}.dump());
  ASSERT_FALSE(inv.ok());
  EXPECT_THAT(inv.status().message(), HasSubstr("gpus: lists more than 256 GPUs"));
  gpus.erase(gpus.begin());
  EXPECT_TRUE(ParseGpuInventory(Json{{"gpus", gpus}}.dump()).ok());

  Json mig = Json::array();
  for (size_t i = 0; i <= kMaxInventoryMigDevices; ++i) mig.push_back(Json::object());
  inv = ParseGpuInventory(Json{{"gpus", {{{"migDevices", mig}}}}}.dump());
  ASSERT_FALSE(inv.ok());
  EXPECT_THAT(inv.status().message(), HasSubstr("gpus[0].migDevices: lists more than 64"));
}

}  // namespace
}  // namespace gpuop::op
