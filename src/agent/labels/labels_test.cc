#include "agent/labels/labels.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "test/fakes/sysfs/fake_sysfs.h"
#include "test/fakes/sysfs/presets.h"

namespace gpuop::agent {
namespace {

using ::testing::Contains;
using ::testing::Key;
using ::testing::Not;
using ::testing::Pair;

hw::Inventory H100s(int n) {
  hw::Inventory inv{.driver_version = "570.86.15", .cuda_driver_version = 12080};
  for (int i = 0; i < n; ++i) {
    inv.gpus.push_back({.vendor = hw::Vendor::kNvidia,
                        .index = i,
                        .uuid = absl::StrCat("GPU-", i),
                        .product = "NVIDIA H100 80GB HBM3",
                        .architecture = "hopper",
                        .compute_major = 9,
                        .compute_minor = 0,
                        .memory_bytes = 81559ull << 20,
                        .mig_capable = true});
  }
  return inv;
}

TEST(NodeLabelsTest, GpuFeatureDiscoveryKeysForAnH100Node) {
  const NodeLabels labels = ComputeNodeLabels({.nvidia = H100s(8), .machine = "PowerEdge XE9680"});
  EXPECT_EQ(labels, (NodeLabels{
                        {"gpuop.io/gpu.present", "true"},
                        {"gpuop.io/gpu.vendor", "nvidia"},
                        {"nvidia.com/cuda.driver-version.full", "570.86.15"},
                        {"nvidia.com/cuda.driver-version.major", "570"},
                        {"nvidia.com/cuda.driver-version.minor", "86"},
                        {"nvidia.com/cuda.driver-version.revision", "15"},
                        {"nvidia.com/cuda.runtime-version.full", "12.8"},
                        {"nvidia.com/cuda.runtime-version.major", "12"},
                        {"nvidia.com/cuda.runtime-version.minor", "8"},
                        {"nvidia.com/gpu.compute.major", "9"},
                        {"nvidia.com/gpu.compute.minor", "0"},
                        {"nvidia.com/gpu.count", "8"},
                        {"nvidia.com/gpu.family", "hopper"},
                        {"nvidia.com/gpu.machine", "PowerEdge-XE9680"},
                        {"nvidia.com/gpu.memory", "81559"},
                        {"nvidia.com/gpu.present", "true"},
                        {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                        {"nvidia.com/gpu.replicas", "1"},
                        {"nvidia.com/gpu.sharing-strategy", "none"},
                        {"nvidia.com/mig.capable", "true"},
                        {"nvidia.com/mig.strategy", "none"},
                        {"nvidia.com/mps.capable", "false"},
                    }));
}

TEST(NodeLabelsTest, MigSingleDescribesTheMigDevices) {
  hw::Inventory inv = H100s(2);
  for (auto& g : inv.gpus) {
    g.mig_enabled = true;
    for (int m = 0; m < 7; ++m) {
      g.mig_devices.push_back({.uuid = absl::StrCat("MIG-", g.index, m),
                               .profile = "1g.10gb",
                               .memory_bytes = 9984ull << 20});
    }
  }
  const NodeLabels labels =
      ComputeNodeLabels({.nvidia = inv, .plugin_config = {.mig_strategy = MigStrategy::kSingle}});
  EXPECT_THAT(labels,
              Contains(Pair("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb")));
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.count", "14")));
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.memory", "9984")));
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/mig.strategy", "single")));
}

// GFD's labels for mig-strategy=single on a node without MIG-enabled GPUs: the whole GPUs'
// labels, with mig.strategy single.
TEST(NodeLabelsTest, MigSingleWithoutMigEnabledGpusDescribesWholeGpus) {
  const NodeLabels labels = ComputeNodeLabels(
      {.nvidia = H100s(8), .plugin_config = {.mig_strategy = MigStrategy::kSingle}});
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3")));
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.count", "8")));
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.memory", "81559")));
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.replicas", "1")));
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/mig.strategy", "single")));
}

// GFD's newInvalidMigStrategyLabeler: product "<model of the first MIG-enabled GPU>-MIG-INVALID"
// and count, replicas and memory 0, for each of its three invalid layouts.
TEST(NodeLabelsTest, InvalidMigSingleLayoutsAreLabelledMigInvalid) {
  auto with_mig = [](hw::Inventory inv, int gpu, std::vector<std::string> profiles) {
    inv.gpus[gpu].mig_enabled = true;
    inv.gpus[gpu].product = "NVIDIA A100-SXM4-40GB";
    for (const auto& p : profiles) {
      inv.gpus[gpu].mig_devices.push_back(
          {.uuid = absl::StrCat("MIG-", gpu, p), .profile = p, .memory_bytes = 4864ull << 20});
    }
    return inv;
  };
  struct Case {
    const char* name;
    hw::Inventory inventory;
  };
  const Case cases[] = {
      {"MIG on and off", with_mig(H100s(2), 1, {"1g.5gb"})},
      {"MIG on without devices", with_mig(with_mig(H100s(2), 0, {"1g.5gb"}), 1, {})},
      {"two profiles", with_mig(with_mig(H100s(2), 0, {"1g.5gb"}), 1, {"3g.20gb"})},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const NodeLabels labels = ComputeNodeLabels(
        {.nvidia = c.inventory, .plugin_config = {.mig_strategy = MigStrategy::kSingle}});
    EXPECT_THAT(labels,
                Contains(Pair("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB-MIG-INVALID")));
    EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.count", "0")));
    EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.replicas", "0")));
    EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.memory", "0")));
    EXPECT_THAT(labels, Contains(Pair("nvidia.com/mig.strategy", "single")));
  }
}

TEST(NodeLabelsTest, MigMixedPerProfileLabels) {
  hw::Inventory inv = H100s(1);
  inv.gpus[0].mig_enabled = true;
  inv.gpus[0].mig_profiles = {{.name = "1g.10gb", .slice_count = 1},
                              {.name = "3g.40gb", .slice_count = 3}};
  inv.gpus[0].mig_devices = {
      {.uuid = "MIG-a", .profile = "1g.10gb", .memory_bytes = 9984ull << 20},
      {.uuid = "MIG-b", .profile = "1g.10gb", .memory_bytes = 9984ull << 20},
      {.uuid = "MIG-c", .profile = "3g.40gb", .memory_bytes = 40448ull << 20}};
  const NodeLabels labels =
      ComputeNodeLabels({.nvidia = inv, .plugin_config = {.mig_strategy = MigStrategy::kMixed}});
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/mig-1g.10gb.count", "2")));
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/mig-1g.10gb.memory", "9984")));
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/mig-3g.40gb.count", "1")));
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/mig-3g.40gb.slices.gi", "3")));
}

TEST(NodeLabelsTest, TimeSlicingMarksSharedAndReplicas) {
  const hw::Inventory inv = H100s(2);
  DevicePluginConfig config;
  config.sharing = {{.resource = "nvidia.com/gpu", .replicas = 4}};
  auto plan = PlanResources(inv.gpus, config);
  ASSERT_TRUE(plan.ok());
  NodeLabels labels = ComputeNodeLabels({.nvidia = inv, .plugin_config = config, .plan = *plan});
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3-SHARED")));
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.replicas", "4")));
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.sharing-strategy", "time-slicing")));

  config.rename_by_default = true;
  plan = PlanResources(inv.gpus, config);
  labels = ComputeNodeLabels({.nvidia = inv, .plugin_config = config, .plan = *plan});
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3")));
}

TEST(NodeLabelsTest, AmdNodeAndNodeWithoutGpus) {
  fakes::TempDir root;
  fakes::Mi210Node(root.path());
  hw::AmdAccelerator amd({.sysfs_root = root.string()});
  auto discovery = amd.DiscoverAmd();
  ASSERT_TRUE(discovery.ok()) << discovery.status();
  const NodeLabels labels = ComputeNodeLabels({.amd = *discovery});
  EXPECT_THAT(labels, Contains(Pair("gpuop.io/gpu.vendor", "amd")));
  EXPECT_THAT(labels, Contains(Pair("amd.com/gpu.vram", "64G")));
  EXPECT_THAT(labels, Not(Contains(Key("nvidia.com/gpu.present"))));

  EXPECT_TRUE(ComputeNodeLabels({.nvidia = hw::Inventory{}}).empty());
  EXPECT_TRUE(ComputeNodeLabels({}).empty());
}

TEST(NodeLabelsTest, LabelValuesAreValid) {
  EXPECT_EQ(LabelValue("NVIDIA GeForce RTX 4090 (engineering)"),
            "NVIDIA-GeForce-RTX-4090--engineering");
  EXPECT_EQ(LabelValue(std::string(80, 'a')).size(), 63u);
  EXPECT_EQ(LabelValue("--x--"), "x");
}

}  // namespace
}  // namespace gpuop::agent
