#include "hw/amd/amd_labels.h"

#include <map>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/fakes/sysfs/fake_sysfs.h"
#include "test/fakes/sysfs/presets.h"

namespace gpuop::hw {
namespace {

using Labels = std::map<std::string, std::string>;

AmdDiscovery Discover(const fakes::TempDir& dir) {
  AmdAccelerator amd({.sysfs_root = dir.string()});
  absl::StatusOr<AmdDiscovery> discovery = amd.DiscoverAmd();
  EXPECT_TRUE(discovery.ok()) << discovery.status();
  return discovery.ok() ? *std::move(discovery) : AmdDiscovery{};
}

// The node labels the labeller writes for the MI300X preset, each by its rule: the property's
// value under amd.com/gpu.<name> (all eight GPUs agree) and under the beta.amd.com mirror with
// its counter (8); the driver's version and srcversion; the partition mode "spx_nps1" and the
// partitioning the GPUs offer (available_*_partition present).
TEST(AmdLabelsTest, UniformMi300xNode) {
  fakes::TempDir dir;
  fakes::FakeSysfs sysfs = fakes::Mi300xNode(dir.path());
  EXPECT_EQ(AmdNodeLabels(Discover(dir)),
            (Labels{
                {"amd.com/compute-memory-partition", "spx_nps1"},
                {"amd.com/compute-partitioning-supported", "true"},
                {"amd.com/gpu.cu-count", "304"},
                {"amd.com/gpu.device-id", "74a1"},
                {"amd.com/gpu.driver-src-version", "A1C35B0E7F2D9E4C6B8D0F1"},
                {"amd.com/gpu.driver-version", "6.10.5"},
                {"amd.com/gpu.family", "AI"},
                {"amd.com/gpu.product-name", "AMD_Instinct_MI300X_OAM"},
                {"amd.com/gpu.simd-count", "1216"},
                {"amd.com/gpu.vram", "192G"},
                {"amd.com/memory-partitioning-supported", "true"},
                {"beta.amd.com/gpu.cu-count", "304"},
                {"beta.amd.com/gpu.cu-count.304", "8"},
                {"beta.amd.com/gpu.device-id", "74a1"},
                {"beta.amd.com/gpu.device-id.74a1", "8"},
                {"beta.amd.com/gpu.family", "AI"},
                {"beta.amd.com/gpu.family.AI", "8"},
                {"beta.amd.com/gpu.product-name", "AMD_Instinct_MI300X_OAM"},
                {"beta.amd.com/gpu.product-name.AMD_Instinct_MI300X_OAM", "8"},
                {"beta.amd.com/gpu.simd-count", "1216"},
                {"beta.amd.com/gpu.simd-count.1216", "8"},
                {"beta.amd.com/gpu.vram", "192G"},
                {"beta.amd.com/gpu.vram.192G", "8"},
            }));
}

// The in-tree driver has no version or srcversion files: the labeller writes both labels
// empty. An MI210 has no partitions.
TEST(AmdLabelsTest, UniformMi210NodeWithTheInTreeDriver) {
  fakes::TempDir dir;
  fakes::FakeSysfs sysfs = fakes::Mi210Node(dir.path());
  // 68702699520 bytes is 65520 MiB, which the labeller rounds to 64G.
  EXPECT_EQ(AmdNodeLabels(Discover(dir)),
            (Labels{
                {"amd.com/compute-partitioning-supported", "false"},
                {"amd.com/gpu.cu-count", "104"},
                {"amd.com/gpu.device-id", "740f"},
                {"amd.com/gpu.driver-src-version", ""},
                {"amd.com/gpu.driver-version", ""},
                {"amd.com/gpu.family", "AI"},
                {"amd.com/gpu.product-name", "AMD_Instinct_MI210"},
                {"amd.com/gpu.simd-count", "416"},
                {"amd.com/gpu.vram", "64G"},
                {"amd.com/memory-partitioning-supported", "false"},
                {"beta.amd.com/gpu.cu-count", "104"},
                {"beta.amd.com/gpu.cu-count.104", "2"},
                {"beta.amd.com/gpu.device-id", "740f"},
                {"beta.amd.com/gpu.device-id.740f", "2"},
                {"beta.amd.com/gpu.family", "AI"},
                {"beta.amd.com/gpu.family.AI", "2"},
                {"beta.amd.com/gpu.product-name", "AMD_Instinct_MI210"},
                {"beta.amd.com/gpu.product-name.AMD_Instinct_MI210", "2"},
                {"beta.amd.com/gpu.simd-count", "416"},
                {"beta.amd.com/gpu.simd-count.416", "2"},
                {"beta.amd.com/gpu.vram", "64G"},
                {"beta.amd.com/gpu.vram.64G", "2"},
            }));
}

// GPUs that disagree get counter labels under both prefixes and no single value; the first GPU
// (an MI300X) decides the partitioning labels, and the MI210's missing partition does not
// break the node's single mode.
TEST(AmdLabelsTest, MixedNodeUsesCounterLabels) {
  fakes::TempDir dir;
  fakes::FakeSysfs sysfs(dir.path());
  fakes::FakeAmdGpu mi210 = fakes::Mi210Gpu(0);
  mi210.pci.address = "0000:e5:00.0";
  mi210.card = 3;
  mi210.render_minor = 130;
  mi210.hwmon = 9;
  mi210.kfd_node = 4;
  sysfs.AddAmdGpus({fakes::Mi300xGpu(0), fakes::Mi300xGpu(1), mi210});
  sysfs.SetAmdgpuVersion("6.10.5");
  Labels expected = {
      {"amd.com/compute-memory-partition", "spx_nps1"},
      {"amd.com/compute-partitioning-supported", "true"},
      {"amd.com/gpu.driver-src-version", ""},
      {"amd.com/gpu.driver-version", "6.10.5"},
      {"amd.com/gpu.family", "AI"},
      {"amd.com/memory-partitioning-supported", "true"},
      {"beta.amd.com/gpu.family", "AI"},
      {"beta.amd.com/gpu.family.AI", "3"},
  };
  for (const char* prefix : {"amd.com/gpu.", "beta.amd.com/gpu."}) {
    for (const auto& [name, count] : Labels{{"cu-count.104", "1"},
                                            {"cu-count.304", "2"},
                                            {"device-id.740f", "1"},
                                            {"device-id.74a1", "2"},
                                            {"product-name.AMD_Instinct_MI210", "1"},
                                            {"product-name.AMD_Instinct_MI300X_OAM", "2"},
                                            {"simd-count.1216", "2"},
                                            {"simd-count.416", "1"},
                                            {"vram.192G", "2"},
                                            {"vram.64G", "1"}}) {
      expected[std::string(prefix) + name] = count;
    }
  }
  EXPECT_EQ(AmdNodeLabels(Discover(dir)), expected);
}

// Two partition modes on one node: no compute-memory-partition label.
TEST(AmdLabelsTest, GpusInDifferentPartitionModesHaveNoModeLabel) {
  fakes::TempDir dir;
  fakes::FakeSysfs sysfs(dir.path());
  fakes::FakeAmdGpu cpx = fakes::Mi300xGpu(1);
  cpx.compute_partition = "CPX";
  sysfs.AddAmdGpus({fakes::Mi300xGpu(0), cpx});
  const Labels labels = AmdNodeLabels(Discover(dir));
  EXPECT_FALSE(labels.contains("amd.com/compute-memory-partition"));
  EXPECT_EQ(labels.at("amd.com/compute-partitioning-supported"), "true");
}

TEST(AmdLabelsTest, EmptyInventoryHasNoLabels) {
  EXPECT_EQ(AmdNodeLabels(Inventory{.driver_version = "6.10.5"}, {}), Labels{});
}

// Labels every AMD node has whatever its GPUs report: the driver's versions and the
// partitioning support, here unknown.
Labels NodeLabels(Labels gpu_labels) {
  gpu_labels.insert({{"amd.com/gpu.driver-version", ""},
                     {"amd.com/gpu.driver-src-version", ""},
                     {"amd.com/compute-partitioning-supported", "false"},
                     {"amd.com/memory-partitioning-supported", "false"}});
  return gpu_labels;
}

TEST(AmdLabelsTest, GpusWithoutAmdFactsLabelOnlyWhatGpuCarries) {
  Inventory inventory{
      .gpus = {Gpu{.index = 0, .product = "AMD Instinct MI100", .memory_bytes = 34342961152}}};
  EXPECT_EQ(AmdNodeLabels(inventory, {}),
            NodeLabels({{"amd.com/gpu.product-name", "AMD_Instinct_MI100"},
                        {"amd.com/gpu.vram", "32G"},
                        {"beta.amd.com/gpu.product-name", "AMD_Instinct_MI100"},
                        {"beta.amd.com/gpu.product-name.AMD_Instinct_MI100", "1"},
                        {"beta.amd.com/gpu.vram", "32G"},
                        {"beta.amd.com/gpu.vram.32G", "1"}}));
}

TEST(AmdLabelsTest, ProductNamesBecomeValidLabelValues) {
  Inventory inventory{.gpus = {Gpu{.index = 0, .product = "AMD Instinct MI250X / MI250 (OAM)"}}};
  EXPECT_EQ(AmdNodeLabels(inventory, {}),
            NodeLabels({{"amd.com/gpu.product-name", "AMD_Instinct_MI250X___MI250_OAM"},
                        {"beta.amd.com/gpu.product-name", "AMD_Instinct_MI250X___MI250_OAM"},
                        {"beta.amd.com/gpu.product-name.AMD_Instinct_MI250X___MI250_OAM", "1"}}));

  const std::string long_name(80, 'x');
  inventory.gpus = {Gpu{.index = 0, .product = long_name},
                    Gpu{.index = 1, .product = "AMD Instinct MI210 "}};
  Labels labels = AmdNodeLabels(inventory, {});
  // Counter keys keep the key's name segment ("gpu.product-name.<value>") within 63 characters.
  EXPECT_EQ(labels, NodeLabels({{"amd.com/gpu.product-name." + std::string(46, 'x'), "1"},
                                {"amd.com/gpu.product-name.AMD_Instinct_MI210", "1"},
                                {"beta.amd.com/gpu.product-name." + std::string(46, 'x'), "1"},
                                {"beta.amd.com/gpu.product-name.AMD_Instinct_MI210", "1"}}));
  inventory.gpus = {Gpu{.index = 0, .product = long_name}};
  EXPECT_EQ(AmdNodeLabels(inventory, {}),
            NodeLabels({{"amd.com/gpu.product-name", std::string(63, 'x')},
                        {"beta.amd.com/gpu.product-name", std::string(63, 'x')},
                        {"beta.amd.com/gpu.product-name." + std::string(46, 'x'), "1"}}));
}

}  // namespace
}  // namespace gpuop::hw
