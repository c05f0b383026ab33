#include "test/fakes/sysfs/fake_sysfs.h"

#include <filesystem>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/fakes/sysfs/presets.h"

namespace gpuop::fakes {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

fs::path Canonical(const fs::path& path) { return fs::canonical(path); }

std::string LinkBase(const fs::path& link) { return fs::read_symlink(link).filename().string(); }

class FakeSysfsTest : public ::testing::Test {
 protected:
  TempDir dir_;
};

TEST_F(FakeSysfsTest, WritesPciAttributesInKernelFormat) {
  FakeSysfs sysfs(dir_.path());
  sysfs.AddPciDevice({.address = "0000:17:00.0",
                      .vendor = 0x10de,
                      .device = 0x2330,
                      .class_code = 0x030200,
                      .subsystem_vendor = 0x10de,
                      .subsystem_device = 0x16c1,
                      .revision = 0xa1,
                      .numa_node = 0,
                      .local_cpulist = "0-55",
                      .driver = "nvidia",
                      .iommu_group = 17,
                      .sriov_totalvfs = 4});
  const std::string dev = "bus/pci/devices/0000:17:00.0/";
  EXPECT_EQ(sysfs.ReadFile(dev + "vendor"), "0x10de\n");
  EXPECT_EQ(sysfs.ReadFile(dev + "device"), "0x2330\n");
  EXPECT_EQ(sysfs.ReadFile(dev + "class"), "0x030200\n");
  EXPECT_EQ(sysfs.ReadFile(dev + "subsystem_vendor"), "0x10de\n");
  EXPECT_EQ(sysfs.ReadFile(dev + "subsystem_device"), "0x16c1\n");
  EXPECT_EQ(sysfs.ReadFile(dev + "revision"), "0xa1\n");
  EXPECT_EQ(sysfs.ReadFile(dev + "numa_node"), "0\n");
  EXPECT_EQ(sysfs.ReadFile(dev + "local_cpulist"), "0-55\n");
  EXPECT_EQ(sysfs.ReadFile(dev + "sriov_totalvfs"), "4\n");
  EXPECT_THAT(sysfs.ReadFile(dev + "uevent"), HasSubstr("PCI_ID=10DE:2330\n"));
  EXPECT_EQ(sysfs.ReadFile(dev + "modalias"),
            "pci:v000010DEd00002330sv000010DEsd000016C1bc03sc02i00\n");
  EXPECT_EQ(sysfs.DevicePath("0000:17:00.0"), "devices/pci0000:17/0000:17:00.0");
}

TEST_F(FakeSysfsTest, LinksResolveLikeTheKernelsRelativeLinks) {
  FakeSysfs sysfs(dir_.path());
  sysfs.AddPciDevice({.address = "0000:17:00.0",
                      .vendor = 0x10de,
                      .device = 0x2330,
                      .class_code = 0x030200,
                      .driver = "nvidia",
                      .iommu_group = 17});
  const fs::path root = dir_.path();
  const fs::path real = Canonical(root / "devices/pci0000:17/0000:17:00.0");
  const fs::path bus = root / "bus/pci/devices/0000:17:00.0";
  EXPECT_TRUE(fs::is_symlink(bus));
  EXPECT_TRUE(fs::read_symlink(bus).is_relative());
  EXPECT_EQ(Canonical(bus), real);
  EXPECT_EQ(LinkBase(bus / "driver"), "nvidia");
  EXPECT_EQ(Canonical(bus / "driver"), Canonical(root / "bus/pci/drivers/nvidia"));
  EXPECT_EQ(Canonical(root / "bus/pci/drivers/nvidia/0000:17:00.0"), real);
  EXPECT_EQ(Canonical(root / "module/nvidia/drivers/pci:nvidia/0000:17:00.0"), real);
  EXPECT_EQ(LinkBase(bus / "iommu_group"), "17");
  EXPECT_EQ(sysfs.ReadFile("bus/pci/devices/0000:17:00.0/iommu_group/type"), "DMA-FQ\n");
  EXPECT_EQ(Canonical(root / "kernel/iommu_groups/17/devices/0000:17:00.0"), real);
}

TEST_F(FakeSysfsTest, OmitsWhatTheDeviceDoesNotHave) {
  FakeSysfs sysfs(dir_.path());
  sysfs.AddPciDevice(
      {.address = "0000:17:00.0", .vendor = 0x10de, .device = 0x2330, .class_code = 0x030200});
  EXPECT_EQ(sysfs.ReadFile("bus/pci/devices/0000:17:00.0/numa_node"), "-1\n");
  for (const char* file : {"subsystem_vendor", "subsystem_device", "driver", "iommu_group",
                           "sriov_totalvfs", "local_cpulist"}) {
    EXPECT_FALSE(sysfs.Exists(std::string("bus/pci/devices/0000:17:00.0/") + file)) << file;
  }
}

TEST_F(FakeSysfsTest, NestsDevicesUnderTheirBridge) {
  FakeSysfs sysfs(dir_.path());
  sysfs.AddPciDevice({.address = "0000:40:01.1",
                      .vendor = 0x1022,
                      .device = 0x1483,
                      .class_code = 0x060400,
                      .driver = "pcieport"});
  sysfs.AddPciDevice({.address = "0000:41:00.0",
                      .vendor = 0x1002,
                      .device = 0x740f,
                      .class_code = 0x038000,
                      .parent = "0000:40:01.1"});
  EXPECT_EQ(sysfs.DevicePath("0000:41:00.0"), "devices/pci0000:40/0000:40:01.1/0000:41:00.0");
  EXPECT_EQ(Canonical(dir_.path() / "bus/pci/devices/0000:41:00.0"),
            Canonical(dir_.path() / sysfs.DevicePath("0000:41:00.0")));
}

TEST_F(FakeSysfsTest, AmdGpuHasDrmHwmonAndKfdEntries) {
  FakeSysfs sysfs(dir_.path());
  sysfs.AddKfdCpuNode({.kfd_node = 0, .cpu_cores_count = 128, .memory_bytes = 1 << 30});
  FakeAmdGpu gpu = Mi210Gpu(0);
  sysfs.AddAmdGpu(gpu);
  const fs::path root = dir_.path();
  const fs::path real = Canonical(root / "bus/pci/devices/0000:43:00.0");
  EXPECT_EQ(Canonical(root / "class/drm/card0/device"), real);
  EXPECT_EQ(Canonical(root / "class/drm/renderD128/device"), real);
  EXPECT_EQ(Canonical(root / "module/amdgpu/drivers/pci:amdgpu/0000:43:00.0"), real);
  EXPECT_EQ(sysfs.ReadFile("class/drm/card0/device/vendor"), "0x1002\n");
  EXPECT_EQ(sysfs.ReadFile("class/drm/card0/device/mem_info_vram_total"), "68702699520\n");
  EXPECT_EQ(sysfs.ReadFile("class/drm/card0/device/unique_id"), "19019a2b3c4d5e60\n");
  EXPECT_EQ(sysfs.ReadFile("class/drm/renderD128/dev"), "226:128\n");
  EXPECT_EQ(sysfs.HwmonPath("0000:43:00.0"), "devices/pci0000:43/0000:43:00.0/hwmon/hwmon1");
  EXPECT_EQ(sysfs.ReadFile("class/hwmon/hwmon1/name"), "amdgpu\n");
  EXPECT_EQ(sysfs.ReadFile("class/hwmon/hwmon1/temp1_label"), "edge\n");
  EXPECT_EQ(sysfs.ReadFile("class/hwmon/hwmon1/temp1_input"), "35000\n");
  EXPECT_EQ(sysfs.ReadFile("class/hwmon/hwmon1/power1_average"), "42000000\n");
  EXPECT_FALSE(sysfs.Exists("class/hwmon/hwmon1/power1_input"));

  const std::string props = sysfs.ReadFile("class/kfd/kfd/topology/nodes/1/properties");
  EXPECT_THAT(props, HasSubstr("\ngfx_target_version 90010\n"));
  EXPECT_THAT(props, HasSubstr("\nsimd_count 416\n"));
  EXPECT_THAT(props, HasSubstr("\nvendor_id 4098\n"));
  EXPECT_THAT(props, HasSubstr("\ndevice_id 29711\n"));
  EXPECT_THAT(props, HasSubstr("\nlocation_id 17152\n"));  // 0x43 << 8
  EXPECT_THAT(props, HasSubstr("\ndrm_render_minor 128\n"));
  EXPECT_THAT(props, HasSubstr("\nunique_id 1801890836410883680\n"));
  EXPECT_THAT(sysfs.ReadFile("class/kfd/kfd/topology/nodes/1/mem_banks/0/properties"),
              HasSubstr("size_in_bytes 68702699520\n"));
  EXPECT_THAT(sysfs.ReadFile("class/kfd/kfd/topology/nodes/0/properties"),
              HasSubstr("cpu_cores_count 128\nsimd_count 0\n"));
  // The GPU's link to its CPU node, both ways.
  EXPECT_THAT(sysfs.ReadFile("class/kfd/kfd/topology/nodes/1/io_links/0/properties"),
              HasSubstr("type 2\nversion_major 0\nversion_minor 0\nnode_from 1\nnode_to 0\n"));
  EXPECT_THAT(sysfs.ReadFile("class/kfd/kfd/topology/nodes/0/io_links/0/properties"),
              HasSubstr("node_from 0\nnode_to 1\n"));
}

TEST_F(FakeSysfsTest, HivePeersGetXgmiIoLinks) {
  FakeSysfs sysfs(dir_.path());
  FakeAmdGpu a = Mi300xGpu(0), b = Mi300xGpu(1);
  sysfs.AddAmdGpu(a);
  sysfs.AddAmdGpu(b);
  EXPECT_THAT(sysfs.ReadFile("class/kfd/kfd/topology/nodes/2/io_links/0/properties"),
              HasSubstr("type 11\nversion_major 0\nversion_minor 0\nnode_from 2\nnode_to 3\n"));
  EXPECT_THAT(sysfs.ReadFile("class/kfd/kfd/topology/nodes/3/properties"),
              HasSubstr("\nio_links_count 1\n"));
}

TEST_F(FakeSysfsTest, RemovedDeviceLeavesNoDirectoryOrKfdNode) {
  FakeSysfs sysfs(dir_.path());
  sysfs.AddAmdGpu(Mi300xGpu(0));
  sysfs.AddAmdGpu(Mi300xGpu(1));
  const std::string path = sysfs.DevicePath("0000:26:00.0");
  sysfs.RemovePciDevice("0000:26:00.0");
  EXPECT_FALSE(sysfs.Exists(path));
  EXPECT_FALSE(fs::is_symlink(dir_.path() / "bus/pci/devices/0000:26:00.0"));
  EXPECT_FALSE(sysfs.Exists("module/amdgpu/drivers/pci:amdgpu/0000:26:00.0"));
  EXPECT_FALSE(sysfs.Exists("class/kfd/kfd/topology/nodes/3"));
  EXPECT_TRUE(sysfs.Exists("class/kfd/kfd/topology/nodes/2/properties"));
  EXPECT_TRUE(sysfs.Exists("bus/pci/devices/0000:05:00.0/vendor"));
}

TEST_F(FakeSysfsTest, Mi300xPresetHasEightGpusInOneHive) {
  FakeSysfs sysfs = Mi300xNode(dir_.path());
  int gpus = 0;
  for (const auto& entry :
       fs::directory_iterator(dir_.path() / "module/amdgpu/drivers/pci:amdgpu")) {
    if (entry.path().filename().string().starts_with("0000:")) ++gpus;
  }
  EXPECT_EQ(gpus, 8);
  EXPECT_EQ(sysfs.ReadFile("module/amdgpu/version"), "6.10.5\n");
  EXPECT_EQ(sysfs.ReadFile("class/drm/card8/device/device"), "0x74a1\n");
  EXPECT_EQ(sysfs.ReadFile("class/drm/card1/device/current_compute_partition"), "SPX\n");
  EXPECT_THAT(sysfs.ReadFile("class/kfd/kfd/topology/nodes/9/properties"),
              HasSubstr("\nio_links_count 8\n"));                // the CPU node and 7 XGMI peers
  EXPECT_FALSE(sysfs.Exists("class/hwmon/hwmon2/temp1_input"));  // no edge sensor on MI300X
}

TEST_F(FakeSysfsTest, HgxPresetWithoutDriverHasUnboundGpus) {
  FakeSysfs sysfs = NvidiaHgxNode(dir_.path(), /*driver_loaded=*/false);
  EXPECT_FALSE(fs::is_symlink(dir_.path() / "bus/pci/devices/0000:18:00.0/driver"));
  EXPECT_FALSE(sysfs.Exists("module/nvidia"));
  EXPECT_EQ(LinkBase(dir_.path() / "bus/pci/devices/0000:1a:00.0/driver"), "mlx5_core");
}

TEST(FakeSysfsTempDirTest, RemovesItsTreeOnDestruction) {
  fs::path path;
  {
    TempDir dir;
    path = dir.path();
    FakeSysfs sysfs = EmptyNode(path);
    EXPECT_TRUE(fs::exists(path / "bus/pci/devices/0000:00:00.0/vendor"));
  }
  EXPECT_FALSE(fs::exists(path));
}

}  // namespace
}  // namespace gpuop::fakes
