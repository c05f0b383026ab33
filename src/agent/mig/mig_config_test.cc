#include "agent/mig/mig_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuop::agent::mig {
namespace {

using ::testing::HasSubstr;

constexpr char kConfig[] = R"(
version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false
  all-1g.5gb:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.5gb": 7
  custom:
    - devices: [0, 1]
      mig-enabled: true
      mig-devices: {"3g.20gb": 2}
    - devices: [2]
      device-filter: ["NVIDIA A100-SXM4-40GB", "NVIDIA H100 80GB HBM3"]
      mig-enabled: true
      mig-devices: {"4g.20gb": 1, "2g.10gb": 0}
    - devices: all
      device-filter: NVIDIA L4
      mig-enabled: false
)";

TEST(MigConfigTest, ParsesMigPartedShape) {
  auto config = ParseMigConfig(kConfig, "/etc/mig.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->source, "/etc/mig.yaml");
  ASSERT_EQ(config->layouts.size(), 3u);
  const auto& all = config->layouts.at("all-1g.5gb");
  ASSERT_EQ(all.size(), 1u);
  EXPECT_TRUE(all[0].devices.all);
  EXPECT_TRUE(all[0].mig_enabled);
  EXPECT_EQ(all[0].mig_devices, (std::map<std::string, int>{{"1g.5gb", 7}}));
  const auto& custom = config->layouts.at("custom");
  ASSERT_EQ(custom.size(), 3u);
  EXPECT_FALSE(custom[0].devices.all);
  EXPECT_EQ(custom[0].devices.indexes, (std::vector<int>{0, 1}));
  EXPECT_EQ(custom[1].device_filter.size(), 2u);
  // A count of zero is no device.
  EXPECT_EQ(custom[1].mig_devices, (std::map<std::string, int>{{"4g.20gb", 1}}));
  EXPECT_EQ(custom[2].device_filter, (std::vector<std::string>{"NVIDIA L4"}));
}

struct BadConfig {
  const char* name;
  const char* yaml;
  const char* message;
};

class MigConfigErrorTest : public ::testing::TestWithParam<BadConfig> {};

TEST_P(MigConfigErrorTest, NamesFileAndField) {
  auto config = ParseMigConfig(GetParam().yaml, "/etc/mig.yaml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("mig config /etc/mig.yaml: "));
  EXPECT_THAT(std::string(config.status().message()), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Errors, MigConfigErrorTest,
    ::testing::Values(
        BadConfig{"NotAMap", "- a", "(document): must be a map"},
        BadConfig{"NoVersion", "mig-configs: {}", "version: required"},
        BadConfig{"WrongVersion", "version: v2\nmig-configs: {}", "version: \"v2\" is not v1"},
        BadConfig{"UnknownTopKey", "version: v1\nmig-config: {}", "mig-config: unknown field"},
        BadConfig{"NoConfigs", "version: v1", "mig-configs: required"},
        BadConfig{"LayoutNotList", "version: v1\nmig-configs: {a: {devices: all}}",
                  "mig-configs.a: must be a list of entries"},
        BadConfig{"NoDevices", "version: v1\nmig-configs: {a: [{mig-enabled: true}]}",
                  "mig-configs.a[0].devices: required"},
        BadConfig{"BadDevices",
                  "version: v1\nmig-configs: {a: [{devices: some, mig-enabled: true}]}",
                  "mig-configs.a[0].devices: must be \"all\" or a list of GPU indexes, got "
                  "\"some\""},
        BadConfig{"NegativeIndex",
                  "version: v1\nmig-configs: {a: [{devices: [0, -1], mig-enabled: true}]}",
                  "mig-configs.a[0].devices[1]: must be a non-negative integer, got \"-1\""},
        BadConfig{"RepeatedIndex",
                  "version: v1\nmig-configs: {a: [{devices: [1, 1], mig-enabled: true}]}",
                  "mig-configs.a[0].devices[1]: GPU 1 is repeated"},
        BadConfig{"NoMigEnabled", "version: v1\nmig-configs: {a: [{devices: all}]}",
                  "mig-configs.a[0].mig-enabled: required"},
        BadConfig{"BadBool", "version: v1\nmig-configs: {a: [{devices: all, mig-enabled: maybe}]}",
                  "mig-configs.a[0].mig-enabled: must be true or false"},
        BadConfig{"BadCount",
                  "version: v1\nmig-configs: {a: [{devices: all, mig-enabled: true, "
                  "mig-devices: {1g.5gb: lots}}]}",
                  "mig-configs.a[0].mig-devices.1g.5gb: must be a non-negative integer, got "
                  "\"lots\""},
        BadConfig{"BadProfileName",
                  "version: v1\nmig-configs: {a: [{devices: all, mig-enabled: true, "
                  "mig-devices: {small: 1}}]}",
                  "mig-configs.a[0].mig-devices.small: is not a MIG profile name"},
        BadConfig{"DevicesWithMigOff",
                  "version: v1\nmig-configs: {a: [{devices: all, mig-enabled: false, "
                  "mig-devices: {1g.5gb: 1}}]}",
                  "mig-configs.a[0].mig-devices: MIG devices require mig-enabled: true"},
        BadConfig{"PciIdFilter",
                  "version: v1\nmig-configs: {a: [{devices: all, device-filter: 0x20B010DE, "
                  "mig-enabled: false}]}",
                  "device-filter: \"0x20B010DE\": PCI device ids are not supported"},
        BadConfig{"UnknownEntryKey",
                  "version: v1\nmig-configs: {a: [{devices: all, mig-enabled: false, "
                  "mig-device: {}}]}",
                  "mig-configs.a[0].mig-device: unknown field"},
        BadConfig{"Syntax", "version: v1\nmig-configs: [", "line "}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

std::vector<hw::Gpu> Gpus(const std::vector<std::string>& products) {
  std::vector<hw::Gpu> gpus;
  for (size_t i = 0; i < products.size(); ++i) {
    gpus.push_back({.index = static_cast<int>(i), .product = products[i], .mig_capable = true});
  }
  return gpus;
}

TEST(MigConfigTest, ResolvesByIndexAndProduct) {
  auto config = ParseMigConfig(kConfig, "/etc/mig.yaml");
  ASSERT_TRUE(config.ok());
  const auto gpus = Gpus({"NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-40GB", "nvidia a100-sxm4-40gb",
                          "NVIDIA L4", "NVIDIA T4"});
  auto desired = ResolveLayout(*config, "custom", gpus);
  ASSERT_TRUE(desired.ok()) << desired.status();
  ASSERT_EQ(desired->size(), 4u);  // GPU 4 (a T4) is selected by no entry
  EXPECT_EQ(desired->at(0).mig_devices, (std::map<std::string, int>{{"3g.20gb", 2}}));
  EXPECT_EQ(desired->at(1).mig_devices, (std::map<std::string, int>{{"3g.20gb", 2}}));
  EXPECT_EQ(desired->at(2).mig_devices, (std::map<std::string, int>{{"4g.20gb", 1}}));
  EXPECT_FALSE(desired->at(3).mig_enabled);
  EXPECT_FALSE(desired->contains(4));
}

TEST(MigConfigTest, ResolveErrorsNameTheLayout) {
  auto config = ParseMigConfig(kConfig, "/etc/mig.yaml");
  ASSERT_TRUE(config.ok());
  auto unknown = ResolveLayout(*config, "all-7g", Gpus({"NVIDIA A100-SXM4-40GB"}));
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(unknown.status().message()),
              HasSubstr("MIG layout \"all-7g\" is not defined in /etc/mig.yaml (defined: "
                        "all-1g.5gb, all-disabled, custom)"));

  auto missing = ResolveLayout(*config, "custom", Gpus({"NVIDIA A100-SXM4-40GB"}));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("mig-configs.custom[0].devices names GPU 1, which this node does not "
                        "have (1 GPUs)"));

  auto overlap = ParseMigConfig(R"(
version: v1
mig-configs:
  twice:
    - {devices: all, mig-enabled: false}
    - {devices: [1], mig-enabled: true}
)",
                                "x.yaml");
  ASSERT_TRUE(overlap.ok()) << overlap.status();
  auto resolved = ResolveLayout(*overlap, "twice", Gpus({"A", "B"}));
  EXPECT_THAT(std::string(resolved.status().message()),
              HasSubstr("mig-configs.twice[1] selects GPU 1, which mig-configs.twice[0] already "
                        "selects"));
}

TEST(MigConfigTest, LoadNamesMissingFile) {
  auto config = LoadMigConfig("/nonexistent/mig.yaml");
  EXPECT_EQ(config.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("/nonexistent/mig.yaml"));
}

TEST(MigConfigTest, DescribesLayoutsLargestFirst) {
  EXPECT_EQ(DescribeLayout({.mig_enabled = false}), "MIG disabled");
  EXPECT_EQ(DescribeLayout({.mig_enabled = true}), "MIG enabled, no devices");
  EXPECT_EQ(DescribeLayout({.mig_enabled = true,
                            .mig_devices = {{"1g.5gb", 2}, {"2g.10gb", 1}, {"3g.20gb", 1}}}),
            "1x3g.20gb, 1x2g.10gb, 2x1g.5gb");
}

}  // namespace
}  // namespace gpuop::agent::mig
