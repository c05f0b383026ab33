#include "hw/amd/kfd_topology.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/fakes/sysfs/fake_sysfs.h"
#include "test/fakes/sysfs/presets.h"

namespace gpuop::hw {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::SizeIs;

TEST(AmdKfdTopologyTest, ParsesKeyValueLinesAndSkipsOthers) {
  EXPECT_THAT(ParseKfdProperties("cpu_cores_count 0\nsimd_count 416\n"
                                 "hive_id 11638818706288400384\n"
                                 "name gfx90a\n"  // not a number
                                 "broken\n"       // no value
                                 "a b c\n"        // too many fields
                                 "negative -1\n"  // not unsigned
                                 "\n"),
              ElementsAre(Pair("cpu_cores_count", 0u), Pair("hive_id", 11638818706288400384ULL),
                          Pair("simd_count", 416u)));
}

TEST(AmdKfdTopologyTest, ReadsNodesBanksAndLinks) {
  fakes::TempDir dir;
  fakes::FakeSysfs sysfs = fakes::Mi210Node(dir.path());
  KfdTopology topology = ReadKfdTopology(dir.string());
  EXPECT_THAT(topology.warnings, SizeIs(0));
  ASSERT_THAT(topology.nodes, SizeIs(3));
  const KfdNode& cpu = topology.nodes[0];
  EXPECT_FALSE(cpu.IsGpu());
  EXPECT_EQ(cpu.Get("cpu_cores_count"), 128u);
  EXPECT_EQ(cpu.memory_bytes, uint64_t{512} << 30);
  const KfdNode& gpu = topology.nodes[2];
  EXPECT_EQ(gpu.id, 2);
  EXPECT_TRUE(gpu.IsGpu());
  EXPECT_EQ(gpu.Get("gfx_target_version"), 90010u);
  EXPECT_EQ(gpu.Get("device_id"), 0x740fu);
  EXPECT_EQ(gpu.Get("no_such_key", 7), 7u);
  EXPECT_EQ(gpu.PciAddress(), "0000:44:00.0");
  EXPECT_EQ(gpu.memory_bytes, 68702699520u);
  ASSERT_THAT(gpu.io_links, SizeIs(1));
  EXPECT_EQ(gpu.io_links[0].node_to, 0);
  EXPECT_EQ(gpu.io_links[0].type, kKfdIoLinkPcie);
  EXPECT_THAT(cpu.io_links, SizeIs(2));
}

TEST(AmdKfdTopologyTest, FindsGpusByRenderMinorThenByAddress) {
  fakes::TempDir dir;
  fakes::FakeSysfs sysfs = fakes::Mi210Node(dir.path());
  KfdTopology topology = ReadKfdTopology(dir.string());
  ASSERT_NE(topology.FindGpu(129, ""), nullptr);
  EXPECT_EQ(topology.FindGpu(129, "")->id, 2);
  ASSERT_NE(topology.FindGpu(-1, "0000:43:00.0"), nullptr);
  EXPECT_EQ(topology.FindGpu(-1, "0000:43:00.0")->id, 1);
  EXPECT_EQ(topology.FindGpu(140, "0000:99:00.0"), nullptr);
  EXPECT_EQ(topology.FindGpu(0, "0000:00:00.0"), nullptr);  // CPU nodes are not GPUs
}

TEST(AmdKfdTopologyTest, XgmiPeersAreLinkedByType) {
  fakes::TempDir dir;
  fakes::FakeSysfs sysfs = fakes::Mi300xNode(dir.path());
  KfdTopology topology = ReadKfdTopology(dir.string());
  ASSERT_THAT(topology.nodes, SizeIs(10));
  const KfdNode& gpu = topology.nodes[5];
  int xgmi = 0;
  for (const KfdIoLink& link : gpu.io_links) xgmi += link.type == kKfdIoLinkXgmi ? 1 : 0;
  EXPECT_EQ(xgmi, 7);
}

TEST(AmdKfdTopologyTest, NoKfdIsEmptyWithoutWarnings) {
  fakes::TempDir dir;
  fakes::FakeSysfs sysfs = fakes::EmptyNode(dir.path());
  KfdTopology topology = ReadKfdTopology(dir.string());
  EXPECT_THAT(topology.nodes, SizeIs(0));
  EXPECT_THAT(topology.warnings, SizeIs(0));
}

TEST(AmdKfdTopologyTest, UnreadableNodeIsAWarningNamingItsPath) {
  fakes::TempDir dir;
  fakes::FakeSysfs sysfs = fakes::Mi210Node(dir.path());
  sysfs.Remove("class/kfd/kfd/topology/nodes/1/properties");
  sysfs.WriteFile("class/kfd/kfd/topology/nodes/1/properties/unexpected", "");
  KfdTopology topology = ReadKfdTopology(dir.string());
  EXPECT_THAT(topology.nodes, SizeIs(2));
  ASSERT_THAT(topology.warnings, SizeIs(1));
  EXPECT_THAT(topology.warnings[0], HasSubstr("topology/nodes/1/properties"));
}

}  // namespace
}  // namespace gpuop::hw
