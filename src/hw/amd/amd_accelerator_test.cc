#include "hw/amd/amd_accelerator.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/fakes/sysfs/fake_sysfs.h"
#include "test/fakes/sysfs/presets.h"

namespace gpuop::hw {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

constexpr uint64_t kGiB = uint64_t{1} << 30;

class AmdAcceleratorTest : public ::testing::Test {
 protected:
  AmdDiscovery Discover(const std::string& dev_root = "/dev") {
    AmdAccelerator amd({.sysfs_root = dir_.string(), .dev_root = dev_root});
    absl::StatusOr<AmdDiscovery> discovery = amd.DiscoverAmd();
    EXPECT_TRUE(discovery.ok()) << discovery.status();
    return discovery.ok() ? *std::move(discovery) : AmdDiscovery{};
  }

  fakes::TempDir dir_;
};

TEST_F(AmdAcceleratorTest, Mi300xNodeInventory) {
  fakes::FakeSysfs sysfs = fakes::Mi300xNode(dir_.path());
  AmdDiscovery discovery = Discover();
  EXPECT_THAT(discovery.warnings, SizeIs(0));
  const Inventory& inventory = discovery.inventory;
  EXPECT_EQ(inventory.driver_version, "6.10.5");
  EXPECT_EQ(inventory.cuda_driver_version, 0);
  ASSERT_THAT(inventory.gpus, SizeIs(8));
  ASSERT_THAT(discovery.gpus, SizeIs(8));
  for (int i = 0; i < 8; ++i) {
    const Gpu& gpu = inventory.gpus[static_cast<size_t>(i)];
    EXPECT_EQ(gpu.vendor, Vendor::kAmd);
    EXPECT_EQ(gpu.index, i);
    EXPECT_EQ(gpu.product, "AMD Instinct MI300X OAM");
    EXPECT_EQ(gpu.architecture, "gfx942");
    EXPECT_EQ(gpu.memory_bytes, 192 * kGiB);
    EXPECT_EQ(gpu.numa_node, i < 4 ? 0 : 1);
    EXPECT_EQ(gpu.compute_major, 0);
    EXPECT_FALSE(gpu.mig_capable);
    ASSERT_THAT(gpu.links, SizeIs(7));
    for (const Link& link : gpu.links) {
      EXPECT_EQ(link.kind, LinkKind::kGpuFabric) << i << "->" << link.peer_index;
      EXPECT_EQ(link.fabric_links, 1);
      EXPECT_NE(link.peer_index, i);
    }
  }
  const Gpu& gpu3 = inventory.gpus[3];
  EXPECT_EQ(gpu3.pci_bus_id, "0000:65:00.0");
  EXPECT_EQ(gpu3.uuid, "3a1c5d0a6b9e2f10");
  EXPECT_EQ(gpu3.serial, "692324001110");
  EXPECT_THAT(gpu3.device_nodes, ElementsAre("/dev/kfd", "/dev/dri/card4", "/dev/dri/renderD131"));

  const AmdGpuInfo& info = discovery.gpus[3];
  EXPECT_EQ(info.index, 3);
  EXPECT_EQ(info.pci_bus_id, "0000:65:00.0");
  EXPECT_EQ(info.device_id, 0x74a1);
  EXPECT_EQ(info.card, 4);
  EXPECT_EQ(info.render_minor, 131);
  EXPECT_EQ(info.kfd_node, 5);
  EXPECT_EQ(info.gfx_target_version, 90402u);
  EXPECT_EQ(info.family, "AI");
  EXPECT_EQ(info.simd_count, 1216u);
  EXPECT_EQ(info.simd_per_cu, 4u);
  EXPECT_EQ(info.cu_count, 304u);
  EXPECT_EQ(info.num_xcc, 8u);
  EXPECT_EQ(info.kfd_memory_bytes, 192 * kGiB);
  EXPECT_EQ(info.hive_id, 0xa1b2c3d4e5f60718ULL);
  EXPECT_EQ(info.compute_partition, "spx");
  EXPECT_EQ(info.memory_partition, "nps1");
}

TEST_F(AmdAcceleratorTest, Mi210NodeInventory) {
  fakes::FakeSysfs sysfs = fakes::Mi210Node(dir_.path());
  AmdAccelerator amd({.sysfs_root = dir_.string()});
  absl::StatusOr<Inventory> inventory = amd.Discover();
  ASSERT_TRUE(inventory.ok()) << inventory.status();
  EXPECT_EQ(inventory->driver_version, "");  // in-tree amdgpu
  ASSERT_THAT(inventory->gpus, SizeIs(2));
  const Gpu& gpu = inventory->gpus[1];
  EXPECT_EQ(gpu.pci_bus_id, "0000:44:00.0");
  EXPECT_EQ(gpu.uuid, "19019a2b3c4d5e61");
  EXPECT_EQ(gpu.product, "AMD Instinct MI210");
  EXPECT_EQ(gpu.architecture, "gfx90a");
  EXPECT_EQ(gpu.memory_bytes, 68702699520u);
  EXPECT_EQ(gpu.numa_node, 0);
  EXPECT_THAT(gpu.device_nodes, ElementsAre("/dev/kfd", "/dev/dri/card1", "/dev/dri/renderD129"));
  ASSERT_THAT(gpu.links, SizeIs(1));
  EXPECT_EQ(gpu.links[0].peer_index, 0);
  EXPECT_EQ(gpu.links[0].kind, LinkKind::kSamePcieSwitch);  // both below one PEX switch
  EXPECT_EQ(gpu.links[0].fabric_links, 0);
}

TEST_F(AmdAcceleratorTest, DeviceNodesUseTheDevRoot) {
  fakes::FakeSysfs sysfs(dir_.path());
  sysfs.AddAmdGpu(fakes::Mi210Gpu(0));
  AmdDiscovery discovery = Discover("/host/dev/");
  ASSERT_THAT(discovery.inventory.gpus, SizeIs(1));
  EXPECT_THAT(discovery.inventory.gpus[0].device_nodes,
              ElementsAre("/host/dev/kfd", "/host/dev/dri/card0", "/host/dev/dri/renderD128"));
}

TEST_F(AmdAcceleratorTest, NodeWithoutAmdgpuHasAnEmptyInventory) {
  for (bool nvidia : {false, true}) {
    fakes::TempDir dir;
    fakes::FakeSysfs sysfs =
        nvidia ? fakes::NvidiaHgxNode(dir.path()) : fakes::EmptyNode(dir.path());
    AmdAccelerator amd({.sysfs_root = dir.string()});
    absl::StatusOr<Inventory> inventory = amd.Discover();
    ASSERT_TRUE(inventory.ok()) << inventory.status();
    EXPECT_THAT(inventory->gpus, SizeIs(0));
    EXPECT_EQ(inventory->driver_version, "");
    absl::StatusOr<Sample> sample = amd.TakeSample();
    ASSERT_TRUE(sample.ok()) << sample.status();
    EXPECT_THAT(sample->gpus, SizeIs(0));
  }
}

TEST_F(AmdAcceleratorTest, FallbacksWhenOptionalFilesAreMissing) {
  fakes::FakeSysfs sysfs(dir_.path());
  fakes::FakeAmdGpu gpu = fakes::Mi210Gpu(0);
  gpu.product_name = "";
  gpu.kfd_vram_bytes = 68 * kGiB;
  sysfs.AddAmdGpu(gpu);
  const std::string dev = sysfs.DevicePath("0000:43:00.0");
  sysfs.Remove(dev + "/unique_id");
  sysfs.Remove(dev + "/mem_info_vram_total");
  AmdDiscovery discovery = Discover();
  ASSERT_THAT(discovery.inventory.gpus, SizeIs(1));
  const Gpu& g = discovery.inventory.gpus[0];
  EXPECT_EQ(g.product, "AMD Instinct MI210");  // from the device id
  EXPECT_EQ(g.uuid, "19019a2b3c4d5e60");       // from KFD
  EXPECT_EQ(g.memory_bytes, 68 * kGiB);        // from KFD's memory bank
}

TEST_F(AmdAcceleratorTest, UnknownPartWithoutIdentityFiles) {
  fakes::FakeSysfs sysfs(dir_.path());
  fakes::FakeAmdGpu gpu = fakes::Mi210Gpu(0);
  gpu.pci.device = 0x7fff;
  gpu.product_name = "";
  gpu.unique_id = 0;
  gpu.pci.numa_node = -1;
  sysfs.AddAmdGpu(gpu);
  AmdDiscovery discovery = Discover();
  ASSERT_THAT(discovery.inventory.gpus, SizeIs(1));
  EXPECT_EQ(discovery.inventory.gpus[0].product, "AMD GPU 7fff");
  EXPECT_EQ(discovery.inventory.gpus[0].uuid, "0000:43:00.0");
  EXPECT_FALSE(discovery.inventory.gpus[0].numa_node.has_value());
}

TEST_F(AmdAcceleratorTest, PcieLinksFollowNumaWithoutXgmiOrSwitch) {
  fakes::FakeSysfs sysfs(dir_.path());
  sysfs.AddKfdCpuNode({.kfd_node = 0, .cpu_cores_count = 64});
  sysfs.AddKfdCpuNode({.kfd_node = 1, .cpu_cores_count = 64});
  std::vector<fakes::FakeAmdGpu> gpus;
  for (int i = 0; i < 3; ++i) {
    fakes::FakeAmdGpu gpu = fakes::Mi210Gpu(i % 2);
    gpu.pci.address = std::vector<std::string>{"0000:03:00.0", "0000:83:00.0", "0000:c3:00.0"}[i];
    gpu.pci.numa_node = i == 0 ? 0 : 1;
    gpu.card = i;
    gpu.render_minor = 128 + i;
    gpu.hwmon = i;
    gpu.kfd_node = 2 + i;
    gpus.push_back(gpu);
  }
  sysfs.AddAmdGpus(gpus);
  AmdDiscovery discovery = Discover();
  ASSERT_THAT(discovery.inventory.gpus, SizeIs(3));
  const std::vector<Link>& links = discovery.inventory.gpus[1].links;
  ASSERT_THAT(links, SizeIs(2));
  EXPECT_EQ(links[0].peer_index, 0);
  EXPECT_EQ(links[0].kind, LinkKind::kCrossSocket);
  EXPECT_EQ(links[1].peer_index, 2);
  EXPECT_EQ(links[1].kind, LinkKind::kSameNumaNode);
}

TEST_F(AmdAcceleratorTest, WithoutKfdThereIsNoArchitectureAndNoKfdNode) {
  fakes::FakeSysfs sysfs = fakes::Mi210Node(dir_.path());
  sysfs.Remove("class/kfd");
  AmdDiscovery discovery = Discover();
  EXPECT_THAT(discovery.warnings, SizeIs(0));
  ASSERT_THAT(discovery.inventory.gpus, SizeIs(2));
  EXPECT_EQ(discovery.inventory.gpus[0].architecture, "");
  EXPECT_THAT(discovery.inventory.gpus[0].device_nodes,
              ElementsAre("/dev/dri/card0", "/dev/dri/renderD128"));
  EXPECT_FALSE(discovery.gpus[0].kfd_node.has_value());
  EXPECT_EQ(discovery.gpus[0].cu_count, 0u);
}

TEST_F(AmdAcceleratorTest, MissingKfdNodeIsAWarning) {
  fakes::FakeSysfs sysfs = fakes::Mi210Node(dir_.path());
  sysfs.Remove("class/kfd/kfd/topology/nodes/2");
  AmdDiscovery discovery = Discover();
  ASSERT_THAT(discovery.warnings, SizeIs(1));
  EXPECT_THAT(discovery.warnings[0], HasSubstr("0000:44:00.0: no KFD topology node"));
  EXPECT_EQ(discovery.inventory.gpus[1].architecture, "");
  EXPECT_EQ(discovery.inventory.gpus[0].architecture, "gfx90a");
}

TEST_F(AmdAcceleratorTest, UnreadableIdentityFailsDiscoveryNamingThePath) {
  fakes::FakeSysfs sysfs = fakes::Mi210Node(dir_.path());
  sysfs.WriteFile(sysfs.DevicePath("0000:44:00.0") + "/device", "garbage\n");
  AmdAccelerator amd({.sysfs_root = dir_.string()});
  absl::StatusOr<Inventory> inventory = amd.Discover();
  ASSERT_FALSE(inventory.ok());
  EXPECT_EQ(inventory.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(inventory.status().message(), HasSubstr("discover AMD GPU 0000:44:00.0"));
  EXPECT_THAT(inventory.status().message(), HasSubstr("0000:44:00.0/device"));
}

TEST_F(AmdAcceleratorTest, ForeignDeviceBoundToAmdgpuIsSkipped) {
  fakes::FakeSysfs sysfs = fakes::Mi210Node(dir_.path());
  sysfs.WriteFile(sysfs.DevicePath("0000:43:00.0") + "/vendor", "0x10de\n");
  AmdDiscovery discovery = Discover();
  ASSERT_THAT(discovery.inventory.gpus, SizeIs(1));
  EXPECT_EQ(discovery.inventory.gpus[0].pci_bus_id, "0000:44:00.0");
  EXPECT_EQ(discovery.inventory.gpus[0].index, 0);
  ASSERT_THAT(discovery.warnings, SizeIs(1));
  EXPECT_THAT(discovery.warnings[0], HasSubstr("0000:43:00.0"));
}

TEST_F(AmdAcceleratorTest, NoEventsAndNoMig) {
  fakes::FakeSysfs sysfs = fakes::Mi210Node(dir_.path());
  AmdAccelerator amd({.sysfs_root = dir_.string()});
  EXPECT_EQ(amd.vendor(), Vendor::kAmd);
  EXPECT_EQ(amd.WaitEvents(absl::Seconds(1)).status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(amd.SetMigMode(0, true).status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(amd.CreateMigDevice(0, "1g.10gb").status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(amd.DestroyMigDevice(0, 1).code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace gpuop::hw
