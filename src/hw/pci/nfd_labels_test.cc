#include "hw/pci/nfd_labels.h"

#include <map>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/fakes/sysfs/fake_sysfs.h"
#include "test/fakes/sysfs/presets.h"

namespace gpuop::hw {
namespace {

using Labels = std::map<std::string, std::string>;

PciInventory Discovered(const fakes::TempDir& dir) {
  absl::StatusOr<PciInventory> inventory = DiscoverPci(dir.string());
  EXPECT_TRUE(inventory.ok()) << inventory.status();
  return inventory.ok() ? *std::move(inventory) : PciInventory{};
}

PciDevice H100() {
  return {.address = "0000:18:00.0",
          .vendor_id = 0x10de,
          .device_id = 0x2330,
          .subsystem_vendor_id = 0x10de,
          .subsystem_device_id = 0x16c1,
          .class_code = 0x030200};
}

TEST(NfdPciLabelsTest, HgxNodeWithNfdDefaults) {
  fakes::TempDir dir;
  fakes::FakeSysfs sysfs = fakes::NvidiaHgxNode(dir.path());
  // NVSwitches (class 0680) are not in NFD's default whitelist.
  EXPECT_EQ(NfdPciLabels(Discovered(dir)),
            (Labels{{"feature.node.kubernetes.io/pci-0302_10de.present", "true"}}));
}

TEST(NfdPciLabelsTest, HgxNodeWithTheNvidiaGpuOperatorsConfig) {
  fakes::TempDir dir;
  fakes::FakeSysfs sysfs = fakes::NvidiaHgxNode(dir.path(), /*driver_loaded=*/false);
  EXPECT_EQ(NfdPciLabels(Discovered(dir), NfdPciConfig::NvidiaGpuOperator()),
            (Labels{{"feature.node.kubernetes.io/pci-10de.present", "true"}}));
}

TEST(NfdPciLabelsTest, AmdNodes) {
  {
    fakes::TempDir dir;
    fakes::FakeSysfs sysfs = fakes::Mi300xNode(dir.path());
    EXPECT_EQ(NfdPciLabels(Discovered(dir)),
              (Labels{{"feature.node.kubernetes.io/pci-1200_1002.present", "true"}}));
    // The NVIDIA operator's whitelist has no 12xx class.
    EXPECT_EQ(NfdPciLabels(Discovered(dir), NfdPciConfig::NvidiaGpuOperator()), Labels{});
  }
  {
    fakes::TempDir dir;
    fakes::FakeSysfs sysfs = fakes::Mi210Node(dir.path());
    EXPECT_EQ(NfdPciLabels(Discovered(dir)),
              (Labels{{"feature.node.kubernetes.io/pci-0380_1002.present", "true"}}));
  }
}

TEST(NfdPciLabelsTest, EmptyNodeHasNoLabels) {
  fakes::TempDir dir;
  fakes::FakeSysfs sysfs = fakes::EmptyNode(dir.path());
  EXPECT_EQ(NfdPciLabels(Discovered(dir)), Labels{});
}

TEST(NfdPciLabelsTest, SriovCapableDevice) {
  PciDevice gpu = H100();
  gpu.sriov_totalvfs = 16;
  EXPECT_EQ(NfdPciLabels({.devices = {gpu}}),
            (Labels{{"feature.node.kubernetes.io/pci-0302_10de.present", "true"},
                    {"feature.node.kubernetes.io/pci-0302_10de.sriov.capable", "true"}}));
}

TEST(NfdPciLabelsTest, FieldsFollowNfdsOrderNotTheConfigs) {
  NfdPciConfig config{.device_label_fields = {NfdPciField::kSubsystemDevice, NfdPciField::kDevice,
                                              NfdPciField::kVendor, NfdPciField::kClass,
                                              NfdPciField::kSubsystemVendor}};
  EXPECT_EQ(NfdPciLabels({.devices = {H100()}}, config),
            (Labels{{"feature.node.kubernetes.io/pci-0302_10de_2330_10de_16c1.present", "true"}}));
}

TEST(NfdPciLabelsTest, NoFieldsMeansNfdsDefaults) {
  NfdPciConfig config{.device_label_fields = {}};
  EXPECT_EQ(NfdPciLabels({.devices = {H100()}}, config),
            (Labels{{"feature.node.kubernetes.io/pci-0302_10de.present", "true"}}));
}

TEST(NfdPciLabelsTest, WhitelistIsAPrefixMatchInLowerCase) {
  PciDevice amd{.vendor_id = 0x1002,
                .device_id = 0x74a1,
                .subsystem_vendor_id = 0x1002,
                .subsystem_device_id = 0x74a1,
                .class_code = 0x120000};
  EXPECT_EQ(NfdPciLabels({.devices = {amd, H100()}}, {.device_class_whitelist = {"12"}}),
            (Labels{{"feature.node.kubernetes.io/pci-1200_1002.present", "true"}}));
  EXPECT_EQ(NfdPciLabels({.devices = {amd, H100()}}, {.device_class_whitelist = {"030"}}),
            (Labels{{"feature.node.kubernetes.io/pci-0302_10de.present", "true"}}));
  PciDevice switch_device = H100();
  switch_device.class_code = 0x0b4000;
  EXPECT_EQ(NfdPciLabels({.devices = {switch_device}}, {.device_class_whitelist = {"0B40"}}),
            (Labels{{"feature.node.kubernetes.io/pci-0b40_10de.present", "true"}}));
}

TEST(NfdPciLabelsTest, DeviceWithoutSubsystemIdsIsSkippedLikeNfdDoes) {
  PciDevice gpu = H100();
  gpu.subsystem_device_id.reset();
  EXPECT_EQ(NfdPciLabels({.devices = {gpu}}), Labels{});
}

}  // namespace
}  // namespace gpuop::hw
