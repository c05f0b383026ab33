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

TEST(AmdLabelsTest, UniformMi300xNode) {
  fakes::TempDir dir;
  fakes::FakeSysfs sysfs = fakes::Mi300xNode(dir.path());
  EXPECT_EQ(AmdNodeLabels(Discover(dir)),
            (Labels{
                {"amd.com/gpu.cu-count", "304"},
                {"amd.com/gpu.device-id", "74a1"},
                {"amd.com/gpu.driver-version", "6.10.5"},
                {"amd.com/gpu.family", "AI"},
                {"amd.com/gpu.product-name", "AMD_Instinct_MI300X_OAM"},
                {"amd.com/gpu.simd-count", "1216"},
                {"amd.com/gpu.vram", "192G"},
            }));
}

TEST(AmdLabelsTest, UniformMi210NodeWithTheInTreeDriver) {
  fakes::TempDir dir;
  fakes::FakeSysfs sysfs = fakes::Mi210Node(dir.path());
  // 68702699520 bytes is 65520 MiB, which the labeller rounds to 64G.
  EXPECT_EQ(AmdNodeLabels(Discover(dir)), (Labels{
                                              {"amd.com/gpu.cu-count", "104"},
                                              {"amd.com/gpu.device-id", "740f"},
                                              {"amd.com/gpu.family", "AI"},
                                              {"amd.com/gpu.product-name", "AMD_Instinct_MI210"},
                                              {"amd.com/gpu.simd-count", "416"},
                                              {"amd.com/gpu.vram", "64G"},
                                          }));
}

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
  EXPECT_EQ(AmdNodeLabels(Discover(dir)),
            (Labels{
                {"amd.com/gpu.cu-count.104", "1"},
                {"amd.com/gpu.cu-count.304", "2"},
                {"amd.com/gpu.device-id.740f", "1"},
                {"amd.com/gpu.device-id.74a1", "2"},
                {"amd.com/gpu.driver-version", "6.10.5"},
                {"amd.com/gpu.family", "AI"},
                {"amd.com/gpu.product-name.AMD_Instinct_MI210", "1"},
                {"amd.com/gpu.product-name.AMD_Instinct_MI300X_OAM", "2"},
                {"amd.com/gpu.simd-count.1216", "2"},
                {"amd.com/gpu.simd-count.416", "1"},
                {"amd.com/gpu.vram.192G", "2"},
                {"amd.com/gpu.vram.64G", "1"},
            }));
}

TEST(AmdLabelsTest, EmptyInventoryHasNoLabels) {
  EXPECT_EQ(AmdNodeLabels(Inventory{.driver_version = "6.10.5"}, {}), Labels{});
}

TEST(AmdLabelsTest, GpusWithoutAmdFactsLabelOnlyWhatGpuCarries) {
  Inventory inventory{
      .gpus = {Gpu{.index = 0, .product = "AMD Instinct MI100", .memory_bytes = 34342961152}}};
  EXPECT_EQ(
      AmdNodeLabels(inventory, {}),
      (Labels{{"amd.com/gpu.product-name", "AMD_Instinct_MI100"}, {"amd.com/gpu.vram", "32G"}}));
}

TEST(AmdLabelsTest, ProductNamesBecomeValidLabelValues) {
  Inventory inventory{.gpus = {Gpu{.index = 0, .product = "AMD Instinct MI250X / MI250 (OAM)"}}};
  EXPECT_EQ(AmdNodeLabels(inventory, {}),
            (Labels{{"amd.com/gpu.product-name", "AMD_Instinct_MI250X___MI250_OAM"}}));

  const std::string long_name(80, 'x');
  inventory.gpus = {Gpu{.index = 0, .product = long_name},
                    Gpu{.index = 1, .product = "AMD Instinct MI210 "}};
  Labels labels = AmdNodeLabels(inventory, {});
  // Counter keys keep the key's name segment ("gpu.product-name.<value>") within 63 characters.
  EXPECT_EQ(labels, (Labels{{"amd.com/gpu.product-name." + std::string(46, 'x'), "1"},
                            {"amd.com/gpu.product-name.AMD_Instinct_MI210", "1"}}));
  inventory.gpus = {Gpu{.index = 0, .product = long_name}};
  EXPECT_EQ(AmdNodeLabels(inventory, {}),
            (Labels{{"amd.com/gpu.product-name", std::string(63, 'x')}}));
}

}  // namespace
}  // namespace gpuop::hw
