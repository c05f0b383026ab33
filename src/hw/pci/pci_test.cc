#include "hw/pci/pci.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/fakes/sysfs/fake_sysfs.h"
#include "test/fakes/sysfs/presets.h"

namespace gpuop::hw {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

std::vector<std::string> Addresses(const std::vector<PciDevice>& devices) {
  std::vector<std::string> addresses;
  for (const PciDevice& d : devices) addresses.push_back(d.address);
  return addresses;
}

class PciDiscoveryTest : public ::testing::Test {
 protected:
  PciInventory Discover() {
    absl::StatusOr<PciInventory> inventory = DiscoverPci(dir_.string());
    EXPECT_TRUE(inventory.ok()) << inventory.status();
    return inventory.ok() ? *std::move(inventory) : PciInventory{};
  }

  fakes::TempDir dir_;
};

TEST_F(PciDiscoveryTest, HgxNodeHasEightGpusAndFourNvSwitches) {
  fakes::FakeSysfs sysfs = fakes::NvidiaHgxNode(dir_.path());
  PciInventory inventory = Discover();
  EXPECT_THAT(inventory.errors, SizeIs(0));
  ASSERT_THAT(inventory.devices, SizeIs(12));
  EXPECT_TRUE(inventory.HasNvidiaGpu());
  EXPECT_EQ(inventory.GpuCount(Vendor::kNvidia), 8);
  EXPECT_FALSE(inventory.HasGpu(Vendor::kAmd));
  EXPECT_EQ(inventory.NvSwitchCount(), 4);
  EXPECT_EQ(
      Addresses(inventory.NvSwitches()),
      (std::vector<std::string>{"0000:05:00.0", "0000:06:00.0", "0000:07:00.0", "0000:08:00.0"}));
  EXPECT_EQ(
      Addresses(inventory.Gpus(Vendor::kNvidia)),
      (std::vector<std::string>{"0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
                                "0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0"}));

  const PciDevice* gpu = inventory.Find("0000:9a:00.0");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->vendor(), Vendor::kNvidia);
  EXPECT_EQ(gpu->vendor_id, 0x10de);
  EXPECT_EQ(gpu->device_id, 0x2330);
  EXPECT_EQ(gpu->subsystem_vendor_id, 0x10de);
  EXPECT_EQ(gpu->subsystem_device_id, 0x16c1);
  EXPECT_EQ(gpu->class_code, 0x030200u);
  EXPECT_EQ(gpu->class4(), 0x0302);
  EXPECT_EQ(gpu->revision, 0xa1);
  EXPECT_EQ(gpu->numa_node, 1);
  EXPECT_EQ(gpu->driver, "nvidia");
  EXPECT_EQ(gpu->iommu_group, 100);
  EXPECT_EQ(gpu->iommu_group_type, "DMA-FQ");
  EXPECT_EQ(gpu->local_cpulist, "56-111,168-223");
  EXPECT_FALSE(gpu->sriov_totalvfs.has_value());
  EXPECT_TRUE(gpu->IsGpu());
  EXPECT_FALSE(gpu->IsNvSwitch());

  const PciDevice* nvswitch = inventory.Find("0000:07:00.0");
  ASSERT_NE(nvswitch, nullptr);
  EXPECT_TRUE(nvswitch->IsNvSwitch());
  EXPECT_FALSE(nvswitch->IsGpu());
  EXPECT_EQ(nvswitch->class_code, 0x068000u);
  EXPECT_EQ(nvswitch->driver, "nvidia-nvswitch");
}

TEST_F(PciDiscoveryTest, UnrelatedDevicesAreExcluded) {
  fakes::FakeSysfs sysfs = fakes::NvidiaHgxNode(dir_.path());
  PciInventory inventory = Discover();
  EXPECT_EQ(inventory.Find("0000:1a:00.0"), nullptr);  // ConnectX-7
  EXPECT_EQ(inventory.Find("0000:03:00.0"), nullptr);  // ASPEED display: not our vendor
  EXPECT_EQ(inventory.Find("0000:02:00.0"), nullptr);  // its bridge
  EXPECT_EQ(inventory.Find("0000:04:00.0"), nullptr);  // Intel, but Ethernet
}

TEST_F(PciDiscoveryTest, GpusAreFoundBeforeAnyDriverIsLoaded) {
  fakes::FakeSysfs sysfs = fakes::NvidiaHgxNode(dir_.path(), /*driver_loaded=*/false);
  PciInventory inventory = Discover();
  EXPECT_THAT(inventory.errors, SizeIs(0));
  EXPECT_EQ(inventory.GpuCount(Vendor::kNvidia), 8);
  EXPECT_EQ(inventory.NvSwitchCount(), 4);
  for (const PciDevice& device : inventory.devices) {
    EXPECT_EQ(device.driver, "") << device.address;
  }
}

TEST_F(PciDiscoveryTest, Mi300xGpusAreProcessingAcceleratorsOnTwoNumaNodes) {
  fakes::FakeSysfs sysfs = fakes::Mi300xNode(dir_.path());
  PciInventory inventory = Discover();
  EXPECT_THAT(inventory.errors, SizeIs(0));
  ASSERT_THAT(inventory.devices, SizeIs(8));  // root ports (1022:14ab) are not ours
  EXPECT_EQ(inventory.GpuCount(Vendor::kAmd), 8);
  EXPECT_FALSE(inventory.HasNvidiaGpu());
  EXPECT_EQ(inventory.NvSwitchCount(), 0);
  for (size_t i = 0; i < inventory.devices.size(); ++i) {
    const PciDevice& d = inventory.devices[i];
    EXPECT_EQ(d.vendor(), Vendor::kAmd);
    EXPECT_EQ(d.device_id, 0x74a1);
    EXPECT_EQ(d.class_code, 0x120000u);
    EXPECT_EQ(d.driver, "amdgpu");
    EXPECT_EQ(d.numa_node, i < 4 ? 0 : 1);
  }
}

TEST_F(PciDiscoveryTest, Mi210GpusAreDisplayControllers) {
  fakes::FakeSysfs sysfs = fakes::Mi210Node(dir_.path());
  PciInventory inventory = Discover();
  ASSERT_EQ(Addresses(inventory.Gpus()),
            (std::vector<std::string>{"0000:43:00.0", "0000:44:00.0"}));
  const PciDevice& gpu = inventory.devices[1];
  EXPECT_EQ(gpu.class_code, 0x038000u);
  EXPECT_EQ(gpu.device_id, 0x740f);
  EXPECT_EQ(gpu.subsystem_device_id, 0x0c34);
  EXPECT_EQ(gpu.revision, 0x02);
  EXPECT_EQ(gpu.iommu_group, 41);
}

TEST_F(PciDiscoveryTest, EmptyNodeHasNoAccelerators) {
  fakes::FakeSysfs sysfs = fakes::EmptyNode(dir_.path());
  PciInventory inventory = Discover();
  EXPECT_THAT(inventory.devices, SizeIs(0));
  EXPECT_THAT(inventory.errors, SizeIs(0));
  EXPECT_FALSE(inventory.HasNvidiaGpu());
}

TEST_F(PciDiscoveryTest, NoNumaAffinityIsOmittedAndMissingOptionalFilesAreFine) {
  fakes::FakeSysfs sysfs(dir_.path());
  // A passthrough GPU in a VM: no NUMA affinity, no subsystem ids, no IOMMU, vfio-pci.
  sysfs.AddPciDevice({.address = "0000:00:05.0",
                      .vendor = 0x10de,
                      .device = 0x2330,
                      .class_code = 0x030200,
                      .numa_node = -1,
                      .driver = "vfio-pci"});
  PciInventory inventory = Discover();
  EXPECT_THAT(inventory.errors, SizeIs(0));
  ASSERT_THAT(inventory.devices, SizeIs(1));
  const PciDevice& d = inventory.devices[0];
  EXPECT_FALSE(d.numa_node.has_value());
  EXPECT_FALSE(d.subsystem_vendor_id.has_value());
  EXPECT_FALSE(d.iommu_group.has_value());
  EXPECT_EQ(d.iommu_group_type, "");
  EXPECT_EQ(d.local_cpulist, "");
  EXPECT_EQ(d.driver, "vfio-pci");
}

TEST_F(PciDiscoveryTest, IntelDataCenterGpuIsListed) {
  fakes::FakeSysfs sysfs(dir_.path());
  sysfs.AddPciDevice({.address = "0000:29:00.0",
                      .vendor = 0x8086,
                      .device = 0x0bd5,
                      .class_code = 0x038000,
                      .numa_node = 0,
                      .driver = "i915"});
  PciInventory inventory = Discover();
  EXPECT_EQ(inventory.GpuCount(Vendor::kIntel), 1);
  EXPECT_EQ(inventory.Gpus(Vendor::kIntel)[0].driver, "i915");
}

TEST_F(PciDiscoveryTest, GarbageClassIsReportedWithItsPathAndHidesNoOtherDevice) {
  fakes::FakeSysfs sysfs = fakes::NvidiaHgxNode(dir_.path());
  sysfs.WriteFile(sysfs.DevicePath("0000:3a:00.0") + "/class", "garbage\n");
  PciInventory inventory = Discover();
  EXPECT_EQ(inventory.GpuCount(Vendor::kNvidia), 7);
  EXPECT_EQ(inventory.Find("0000:3a:00.0"), nullptr);
  EXPECT_EQ(inventory.NvSwitchCount(), 4);
  ASSERT_THAT(inventory.errors, SizeIs(1));
  EXPECT_EQ(inventory.errors[0].code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(inventory.errors[0].message(), HasSubstr("/bus/pci/devices/0000:3a:00.0/class"));
  EXPECT_THAT(inventory.errors[0].message(), HasSubstr("garbage"));
}

TEST_F(PciDiscoveryTest, MissingVendorIsReportedWithItsPathAndHidesNoOtherDevice) {
  fakes::FakeSysfs sysfs = fakes::NvidiaHgxNode(dir_.path());
  sysfs.Remove(sysfs.DevicePath("0000:18:00.0") + "/vendor");
  PciInventory inventory = Discover();
  EXPECT_EQ(inventory.GpuCount(Vendor::kNvidia), 7);
  ASSERT_THAT(inventory.errors, SizeIs(1));
  EXPECT_EQ(inventory.errors[0].code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(inventory.errors[0].message(), HasSubstr("/bus/pci/devices/0000:18:00.0/vendor"));
}

TEST_F(PciDiscoveryTest, OversizedDeviceIdIsRejected) {
  fakes::FakeSysfs sysfs = fakes::NvidiaHgxNode(dir_.path());
  sysfs.WriteFile(sysfs.DevicePath("0000:18:00.0") + "/device", "0x12330\n");
  PciInventory inventory = Discover();
  EXPECT_EQ(inventory.GpuCount(Vendor::kNvidia), 7);
  ASSERT_THAT(inventory.errors, SizeIs(1));
  EXPECT_THAT(inventory.errors[0].message(), HasSubstr("0000:18:00.0/device"));
}

TEST_F(PciDiscoveryTest, MalformedOptionalFileKeepsTheDeviceAndIsReported) {
  fakes::FakeSysfs sysfs = fakes::NvidiaHgxNode(dir_.path());
  sysfs.WriteFile(sysfs.DevicePath("0000:18:00.0") + "/numa_node", "zero\n");
  PciInventory inventory = Discover();
  EXPECT_EQ(inventory.GpuCount(Vendor::kNvidia), 8);
  const PciDevice* gpu = inventory.Find("0000:18:00.0");
  ASSERT_NE(gpu, nullptr);
  EXPECT_FALSE(gpu->numa_node.has_value());
  EXPECT_EQ(gpu->driver, "nvidia");
  ASSERT_THAT(inventory.errors, SizeIs(1));
  EXPECT_THAT(inventory.errors[0].message(), HasSubstr("0000:18:00.0/numa_node"));
}

TEST_F(PciDiscoveryTest, WrongRootIsNotFound) {
  absl::StatusOr<PciInventory> inventory = DiscoverPci(dir_.string() + "/nothing");
  ASSERT_FALSE(inventory.ok());
  EXPECT_EQ(inventory.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(inventory.status().message(), HasSubstr("nothing/bus/pci/devices"));
}

TEST(PciAddressTest, AcceptsSysfsFormOnly) {
  EXPECT_TRUE(IsPciAddress("0000:17:00.0"));
  EXPECT_TRUE(IsPciAddress("0000:db:1f.7"));
  EXPECT_TRUE(IsPciAddress("10000:e0:00.0"));  // VMD domain
  EXPECT_FALSE(IsPciAddress("0000:DB:00.0"));
  EXPECT_FALSE(IsPciAddress("00000000:17:00.0x"));
  EXPECT_FALSE(IsPciAddress("0000:17:00.8"));
  EXPECT_FALSE(IsPciAddress("0000:17:00"));
  EXPECT_FALSE(IsPciAddress("bind"));
  EXPECT_FALSE(IsPciAddress(""));
}

TEST(PciClassTest, AcceleratorCandidates) {
  struct Case {
    uint16_t vendor;
    uint32_t class_code;
    bool expected;
  };
  for (const Case& c : std::vector<Case>{
           {0x10de, 0x030200, true},   // 3D controller
           {0x10de, 0x030000, true},   // VGA
           {0x1002, 0x038000, true},   // other display controller
           {0x1002, 0x120000, true},   // processing accelerator
           {0x8086, 0x038000, true},   // Intel data center GPU
           {0x10de, 0x068000, true},   // NVSwitch
           {0x1002, 0x068000, false},  // a bridge of another vendor
           {0x10de, 0x040300, false},  // NVIDIA HD audio function
           {0x15b3, 0x020700, false},  // InfiniBand
           {0x1a03, 0x030000, false},  // ASPEED display
           {0x8086, 0x0b4000, false},  // co-processor (QuickAssist)
       }) {
    EXPECT_EQ(IsAcceleratorCandidate(c.vendor, c.class_code), c.expected)
        << std::hex << c.vendor << " " << c.class_code;
  }
}

}  // namespace
}  // namespace gpuop::hw
