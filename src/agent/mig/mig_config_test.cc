#include "agent/mig/mig_config.h"

#include <filesystem>

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
                  "mig-configs.a: must be a non-empty list of entries"},
        BadConfig{"NoDevices", "version: v1\nmig-configs: {a: [{mig-enabled: true}]}",
                  "mig-configs.a[0].devices: required"},
        BadConfig{"BadDevices",
                  "version: v1\nmig-configs: {a: [{devices: some, mig-enabled: true}]}",
                  "mig-configs.a[0].devices: must be \"all\" or a list of GPU indexes, got "
                  "\"some\""},
        BadConfig{"NegativeIndex",
                  "version: v1\nmig-configs: {a: [{devices: [0, -1], mig-enabled: true}]}",
                  "mig-configs.a[0].devices[1]: must be a non-negative integer, got \"-1\""},
        BadConfig{"NoLayouts", "version: v1\nmig-configs: {}", "mig-configs: defines no layout"},
        BadConfig{"EmptyLayout", "version: v1\nmig-configs: {a: []}",
                  "mig-configs.a: must be a non-empty list of entries"},
        BadConfig{"EnabledWithoutDevices",
                  "version: v1\nmig-configs: {a: [{devices: all, mig-enabled: true}]}",
                  "mig-configs.a[0].mig-devices: required when mig-enabled is true (may be {})"},
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
        BadConfig{"BadPciId",
                  "version: v1\nmig-configs: {a: [{devices: all, device-filter: [0x20B010DE, "
                  "0x20BZ10DE], mig-enabled: false}]}",
                  "mig-configs.a[0].device-filter[1]: \"0x20BZ10DE\" is not a PCI device id"},
        BadConfig{"BadSubsystemId",
                  "version: v1\nmig-configs: {a: [{devices: all, device-filter: "
                  "\"0x233010DE:0x16C1XXDE\", mig-enabled: false}]}",
                  "device-filter: \"0x233010DE:0x16C1XXDE\": the subsystem id \"0x16C1XXDE\""},
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

TEST(MigConfigTest, AnUndefinedLayoutNamesTheOnesDefined) {
  auto config = ParseMigConfig(kConfig, "/etc/mig.yaml");
  ASSERT_TRUE(config.ok());
  auto unknown = ResolveLayout(*config, "all-7g", Gpus({"NVIDIA A100-SXM4-40GB"}));
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(unknown.status().message()),
              HasSubstr("MIG layout \"all-7g\" is not defined in /etc/mig.yaml (defined: "
                        "all-1g.5gb, all-disabled, custom)"));
}

// mig-parted walks the entries in order and applies each to the GPUs it selects, so one file
// serves nodes of different sizes: an index the node lacks selects nothing, and the later of two
// entries that select a GPU is what the GPU ends with.
TEST(MigConfigTest, EntriesApplyInOrderAsMigPartedWalksThem) {
  auto config = ParseMigConfig(R"(
version: v1
mig-configs:
  twice:
    - {devices: all, mig-enabled: false}
    - {devices: [1, 1, 5], mig-enabled: true, mig-devices: {"7g.40gb": 1}}
)",
                               "x.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  auto desired = ResolveLayout(*config, "twice", Gpus({"A", "B"}));
  ASSERT_TRUE(desired.ok()) << desired.status();
  ASSERT_EQ(desired->size(), 2u);
  EXPECT_FALSE(desired->at(0).mig_enabled);
  EXPECT_TRUE(desired->at(1).mig_enabled);
  EXPECT_EQ(desired->at(1).mig_devices, (std::map<std::string, int>{{"7g.40gb", 1}}));
}

// `devices: all` passes over GPUs without MIG (mig-parted: "Skipping -- non MIG-capable GPU"); a
// GPU without MIG named by index is left alone when the entry disables MIG, and reaches the
// planner (which refuses it) when the entry enables MIG.
TEST(MigConfigTest, AllSkipsGpusWithoutMig) {
  auto config = ParseMigConfig(R"(
version: v1
mig-configs:
  on:
    - {devices: all, mig-enabled: true, mig-devices: {}}
  off-by-index:
    - {devices: [0, 1], mig-enabled: false}
  on-by-index:
    - {devices: [1], mig-enabled: true, mig-devices: {}}
)",
                               "x.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  std::vector<hw::Gpu> gpus = Gpus({"NVIDIA A100-SXM4-40GB", "NVIDIA T4"});
  gpus[1].mig_capable = false;
  auto on = ResolveLayout(*config, "on", gpus);
  ASSERT_TRUE(on.ok());
  EXPECT_EQ(on->size(), 1u);
  EXPECT_TRUE(on->contains(0));
  auto off = ResolveLayout(*config, "off-by-index", gpus);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->size(), 1u);
  EXPECT_TRUE(off->contains(0));
  auto named = ResolveLayout(*config, "on-by-index", gpus);
  ASSERT_TRUE(named.ok());
  EXPECT_TRUE(named->contains(1));
}

TEST(MigConfigTest, DeviceFilterMatchesPciIdsAsNvmlReportsThem) {
  auto config = ParseMigConfig(R"(
version: v1
mig-configs:
  by-id:
    - device-filter: ["0x20B010DE", "0x20b110de"]
      devices: all
      mig-enabled: true
      mig-devices: {"1g.5gb": 7}
    - device-filter: "0x233010DE:0x16C110DE"
      devices: all
      mig-enabled: true
      mig-devices: {"1g.10gb": 7}
)",
                               "x.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  const auto& entries = config->layouts.at("by-id");
  ASSERT_EQ(entries[0].pci_ids.size(), 2u);
  EXPECT_EQ(entries[0].pci_ids[1].device_id, 0x20B110DEu);
  ASSERT_TRUE(entries[1].pci_ids[0].subsystem_id.has_value());
  EXPECT_EQ(*entries[1].pci_ids[0].subsystem_id, 0x16C110DEu);

  std::vector<hw::Gpu> gpus = Gpus({"NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB",
                                    "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"});
  gpus[0].pci_device_id = 0x20B010DE;
  gpus[1].pci_device_id = 0x20B110DE;
  gpus[2].pci_device_id = 0x233010DE;
  gpus[2].pci_subsystem_id = 0x16C110DE;
  gpus[3].pci_device_id = 0x233010DE;
  gpus[3].pci_subsystem_id = 0x17A610DE;  // another board: the subsystem filter leaves it out
  auto desired = ResolveLayout(*config, "by-id", gpus);
  ASSERT_TRUE(desired.ok()) << desired.status();
  ASSERT_EQ(desired->size(), 3u);
  EXPECT_EQ(desired->at(0).mig_devices.at("1g.5gb"), 7);
  EXPECT_EQ(desired->at(1).mig_devices.at("1g.5gb"), 7);
  EXPECT_EQ(desired->at(2).mig_devices.at("1g.10gb"), 7);
  EXPECT_FALSE(desired->contains(3));
}

// The GPU operator's shipped default (testdata/mig-parted-default.yaml, written from NVIDIA's
// documented layouts) loads unchanged, and all-balanced picks each board's split by PCI id.
TEST(MigConfigTest, TheDocumentedDefaultConfigLoadsUnchanged) {
  auto config =
      LoadMigConfig(std::filesystem::path(GPUOP_MIG_TESTDATA) / "mig-parted-default.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->layouts.size(), 30u);
  EXPECT_EQ(config->layouts.at("all-1g.5gb.me")[0].mig_devices,
            (std::map<std::string, int>{{"1g.5gb+me", 1}}));

  std::vector<hw::Gpu> gpus = Gpus({"NVIDIA A100-SXM4-40GB", "NVIDIA H100 80GB HBM3", "NVIDIA A30",
                                    "NVIDIA L4", "NVIDIA A100-SXM4-40GB"});
  gpus[0].pci_device_id = 0x20B010DE;
  gpus[1].pci_device_id = 0x233010DE;
  gpus[2].pci_device_id = 0x20B710DE;
  gpus[3].pci_device_id = 0x27B810DE;
  gpus[3].mig_capable = false;
  gpus[4].pci_device_id = 0x20B010DE;
  auto balanced = ResolveLayout(*config, "all-balanced", gpus);
  ASSERT_TRUE(balanced.ok()) << balanced.status();
  ASSERT_EQ(balanced->size(), 4u);  // the L4 has no MIG and no filter names it
  EXPECT_EQ(DescribeLayout(balanced->at(0)), "1x3g.20gb, 1x2g.10gb, 2x1g.5gb");
  EXPECT_EQ(DescribeLayout(balanced->at(1)), "1x3g.40gb, 1x2g.20gb, 2x1g.10gb");
  EXPECT_EQ(DescribeLayout(balanced->at(2)), "1x2g.12gb, 2x1g.6gb");
  EXPECT_EQ(balanced->at(4), balanced->at(0));

  // all-1g.10gb: seven on an 80 GB board, four on a 40 GB one.
  auto small = ResolveLayout(*config, "all-1g.10gb", gpus);
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(small->at(0).mig_devices.at("1g.10gb"), 4);
  EXPECT_EQ(small->at(1).mig_devices.at("1g.10gb"), 7);
  EXPECT_FALSE(small->contains(2));

  auto disabled = ResolveLayout(*config, "all-disabled", gpus);
  ASSERT_TRUE(disabled.ok());
  EXPECT_EQ(disabled->size(), 4u);
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
