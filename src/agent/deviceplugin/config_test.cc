#include "agent/deviceplugin/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuop::agent {
namespace {

using ::testing::HasSubstr;

TEST(DevicePluginConfigTest, EmptyIsTheDefault) {
  auto config = ParseDevicePluginConfig("", "f");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->mig_strategy, MigStrategy::kNone);
  EXPECT_EQ(config->device_list_strategy, DeviceListStrategy::kCdi);
  EXPECT_FALSE(config->Shared());
}

TEST(DevicePluginConfigTest, NvidiaFormatWithPerGpuReplicas) {
  auto config = ParseDevicePluginConfig(R"(
version: v1
flags:
  migStrategy: mixed
  deviceListStrategy: both
sharing:
  timeSlicing:
    renameByDefault: true
    failRequestsGreaterThanOne: true
    resources:
    - name: nvidia.com/gpu
      replicas: 4
      devices: ["0", "1"]
    - name: nvidia.com/gpu
      replicas: 8
      devices: ["GPU-abc"]
    - name: nvidia.com/mig-1g.10gb
      replicas: 2
      rename: false
)",
                                        "cm/a100");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->mig_strategy, MigStrategy::kMixed);
  EXPECT_EQ(config->device_list_strategy, DeviceListStrategy::kBoth);
  EXPECT_TRUE(config->rename_by_default);
  EXPECT_TRUE(config->fail_requests_greater_than_one);
  ASSERT_EQ(config->time_slicing.size(), 3u);
  EXPECT_EQ(config->time_slicing[1].replicas, 8);
  EXPECT_EQ(config->time_slicing[1].devices, std::vector<std::string>{"GPU-abc"});
  EXPECT_EQ(config->time_slicing[2].rename, false);
}

struct BadConfig {
  const char* name;
  const char* yaml;
  const char* message;
};

void PrintTo(const BadConfig& c, std::ostream* os) { *os << c.name; }

class DevicePluginConfigErrorTest : public ::testing::TestWithParam<BadConfig> {};

TEST_P(DevicePluginConfigErrorTest, NamesSourceAndField) {
  auto config = ParseDevicePluginConfig(GetParam().yaml, "cm/x");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("config cm/x: "));
  EXPECT_THAT(std::string(config.status().message()), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, DevicePluginConfigErrorTest,
    ::testing::Values(
        BadConfig{"Version", "version: v2\n", "version: \"v2\" is not v1"},
        BadConfig{"Typo", "flags:\n  migStrategie: mixed\n", "flags.migStrategie: unknown field"},
        BadConfig{"Strategy", "flags:\n  migStrategy: all\n",
                  "flags.migStrategy: \"all\": must be none, single or mixed"},
        BadConfig{"ZeroReplicas",
                  "sharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
                  "      replicas: 0\n",
                  "sharing.timeSlicing.resources[0].replicas: must be >= 1"},
        BadConfig{"NotResource",
                  "sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: 2\n",
                  "resources[0].name: \"gpu\" is not an extended resource name"},
        BadConfig{"Overlap",
                  "sharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
                  "      replicas: 2\n      devices: [\"0\"]\n    - name: nvidia.com/gpu\n"
                  "      replicas: 4\n      devices: [\"0\"]\n",
                  "resources[1].devices[0]: \"0\" is already shared by another rule"},
        BadConfig{"TwoWholeRules",
                  "sharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
                  "      replicas: 2\n    - name: nvidia.com/gpu\n      replicas: 4\n",
                  "resources[1].devices: a second rule for every GPU"},
        BadConfig{"NotBool", "sharing:\n  timeSlicing:\n    renameByDefault: maybe\n",
                  "renameByDefault: must be true or false"},
        BadConfig{"BadYaml", "flags: [", "line"}),
    [](const ::testing::TestParamInfo<BadConfig>& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace gpuop::agent
