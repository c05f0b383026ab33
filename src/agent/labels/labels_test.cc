#include "agent/labels/labels.h"

#include <fstream>
#include <optional>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "agent/labels/gfd_labels.h"
#include "agent/labels/gfd_test_labels.h"
#include "test/fakes/sysfs/fake_sysfs.h"
#include "test/fakes/sysfs/presets.h"

namespace gpuop::agent {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
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
                        .mig_capable = true,
                        .pci_class = 0x030200});
  }
  return inv;
}

// Every key GFD writes for a node of eight H100 SXM GPUs (3D controllers) with MIG off, each
// value by GFD's rule: the product with spaces as '-', memory in MiB, the family of compute
// capability 9.x, the machine type with spaces as '-', the driver version split at '.', the
// CUDA version 12080 as 12.8 (and the deprecated cuda.driver.* / cuda.runtime.* copies),
// replicas 1 and strategy none without sharing, no mig.strategy under strategy none.
TEST(NodeLabelsTest, GpuFeatureDiscoveryKeysForAnH100Node) {
  const NodeLabels labels = ComputeNodeLabels({.nvidia = H100s(8), .machine = "PowerEdge XE9680"});
  EXPECT_EQ(labels, gfd_test::WithDriver570Labels({
                        {"nvidia.com/gpu.compute.major", "9"},
                        {"nvidia.com/gpu.compute.minor", "0"},
                        {"nvidia.com/gpu.count", "8"},
                        {"nvidia.com/gpu.family", "hopper"},
                        {"nvidia.com/gpu.machine", "PowerEdge-XE9680"},
                        {"nvidia.com/gpu.memory", "81559"},
                        {"nvidia.com/gpu.mode", "compute"},
                        {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                        {"nvidia.com/gpu.replicas", "1"},
                        {"nvidia.com/gpu.sharing-strategy", "none"},
                        {"nvidia.com/mig.capable", "true"},
                    }));
}

// GFD's sanitise(): characters outside [A-Za-z0-9._- ] are dropped, runs of spaces become one
// '-'.
TEST(NodeLabelsTest, ProductNamesAreSanitisedAsGfdDoes) {
  const struct {
    const char* name;
    const char* product;
  } kCases[] = {
      {"NVIDIA H100 80GB HBM3", "NVIDIA-H100-80GB-HBM3"},
      {"NVIDIA A100-SXM4-40GB", "NVIDIA-A100-SXM4-40GB"},
      {"Tesla T4 (rev a1)", "Tesla-T4-rev-a1"},
      {"  NVIDIA   RTX A6000 ", "NVIDIA-RTX-A6000"},
      {"NVIDIA GeForce RTX 4090 D/\\®", "NVIDIA-GeForce-RTX-4090-D"},
      {"Quadro_RTX 8000.v2", "Quadro_RTX-8000.v2"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(internal::SanitiseProductPart(c.name), c.product);
    hw::Inventory inv = H100s(1);
    inv.gpus[0].product = c.name;
    EXPECT_THAT(ComputeNodeLabels({.nvidia = inv}),
                Contains(Pair("nvidia.com/gpu.product", c.product)));
  }
}

// GFD's family by compute capability, "undefined" where it has no name.
TEST(NodeLabelsTest, FamilyFollowsTheComputeCapability) {
  const struct {
    int major, minor;
    const char* family;
  } kCases[] = {
      {1, 3, "tesla"},      {2, 1, "fermi"},      {3, 7, "kepler"},       {5, 2, "maxwell"},
      {6, 0, "pascal"},     {7, 0, "volta"},      {7, 2, "volta"},        {7, 5, "turing"},
      {8, 0, "ampere"},     {8, 6, "ampere"},     {8, 9, "ada-lovelace"}, {9, 0, "hopper"},
      {10, 0, "blackwell"}, {10, 3, "blackwell"}, {11, 0, "undefined"},   {12, 0, "blackwell"},
      {13, 0, "rubin"},     {14, 0, "undefined"}, {4, 0, "undefined"}};
  for (const auto& c : kCases) {
    SCOPED_TRACE(absl::StrCat(c.major, ".", c.minor));
    hw::Inventory inv = H100s(1);
    inv.gpus[0].compute_major = c.major;
    inv.gpus[0].compute_minor = c.minor;
    const NodeLabels labels = ComputeNodeLabels({.nvidia = inv});
    EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.family", c.family)));
    EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.compute.major", std::to_string(c.major))));
    EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.compute.minor", std::to_string(c.minor))));
  }
  // GFD writes no architecture labels for a GPU without a compute capability.
  hw::Inventory inv = H100s(1);
  inv.gpus[0].compute_major = 0;
  const NodeLabels labels = ComputeNodeLabels({.nvidia = inv});
  EXPECT_THAT(labels, Not(Contains(Key("nvidia.com/gpu.family"))));
  EXPECT_THAT(labels, Not(Contains(Key("nvidia.com/gpu.compute.major"))));
}

// gpu.mode is the first GPU's PCI class: VGA graphics, 3D controller compute, else unknown.
TEST(NodeLabelsTest, GpuModeIsTheFirstGpusPciClass) {
  const struct {
    std::optional<uint32_t> first, second;
    const char* mode;
  } kCases[] = {{0x030000, 0x030000, "graphics"},   {0x030200, 0x030200, "compute"},
                {0x030200, 0x030000, "compute"},    {0x030000, 0x030200, "graphics"},
                {0x038000, 0x038000, "unknown"},    {0x030001, 0x030001, "unknown"},
                {std::nullopt, 0x030200, "unknown"}};
  for (const auto& c : kCases) {
    hw::Inventory inv = H100s(2);
    inv.gpus[0].pci_class = c.first;
    inv.gpus[1].pci_class = c.second;
    EXPECT_THAT(ComputeNodeLabels({.nvidia = inv}), Contains(Pair("nvidia.com/gpu.mode", c.mode)))
        << c.mode;
  }
}

// The machine type file's content without surrounding whitespace, spaces as '-'; "unknown"
// without a file.
TEST(NodeLabelsTest, MachineTypeComesFromItsFile) {
  fakes::TempDir dir;
  const std::string file = (dir.path() / "product_name").string();
  std::ofstream(file) << "  ProLiant XL675d Gen10 Plus\n";
  EXPECT_EQ(MachineType(file), "ProLiant XL675d Gen10 Plus");
  EXPECT_THAT(ComputeNodeLabels({.nvidia = H100s(1), .machine = MachineType(file)}),
              Contains(Pair("nvidia.com/gpu.machine", "ProLiant-XL675d-Gen10-Plus")));
  EXPECT_EQ(MachineType((dir.path() / "missing").string()), "unknown");
  EXPECT_EQ(MachineType(""), "unknown");
  EXPECT_THAT(ComputeNodeLabels({.nvidia = H100s(1)}),
              Contains(Pair("nvidia.com/gpu.machine", "unknown")));
  // A value GFD would write but Kubernetes refuses is made valid.
  EXPECT_THAT(ComputeNodeLabels({.nvidia = H100s(1), .machine = "Standard_ND96isr (H100 v5)"}),
              Contains(Pair("nvidia.com/gpu.machine", "Standard_ND96isr--H100-v5")));
}

// gfd.timestamp is the computation's time in Unix seconds; noTimestamp leaves it out.
TEST(NodeLabelsTest, TimestampUnlessTurnedOff) {
  const absl::Time now = absl::FromUnixSeconds(1764676800);
  EXPECT_THAT(ComputeNodeLabels({.nvidia = H100s(1), .timestamp = now}),
              Contains(Pair("nvidia.com/gfd.timestamp", "1764676800")));
  EXPECT_THAT(ComputeNodeLabels({.nvidia = H100s(1)}),
              Not(Contains(Key("nvidia.com/gfd.timestamp"))));
}

// A driver version of two parts has an empty revision, as GFD writes it; one GFD cannot split
// (or an unknown CUDA version) leaves the version labels out.
TEST(NodeLabelsTest, DriverVersionsOfTwoPartsAndUnparsableOnes) {
  hw::Inventory inv = H100s(1);
  inv.driver_version = "580.65";
  NodeLabels labels = ComputeNodeLabels({.nvidia = inv});
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/cuda.driver-version.revision", "")));
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/cuda.driver.rev", "")));
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/cuda.driver-version.full", "580.65")));
  inv.driver_version = "570";
  inv.cuda_driver_version = 0;
  labels = ComputeNodeLabels({.nvidia = inv});
  for (const auto& [key, value] : labels) {
    EXPECT_FALSE(absl::StartsWith(key, "nvidia.com/cuda.")) << key;
  }
}

// gpu.clique: "<cluster uuid>.<clique id>" when the GPUs registered with one fabric clique.
TEST(NodeLabelsTest, CliqueWhereTheFabricReportsOne) {
  const hw::GpuFabric fabric{.cluster_uuid = "6d9a5c4e-0a2b-4c1d-9e8f-1a2b3c4d5e6f",
                             .clique_id = 32766};
  hw::Inventory inv = H100s(4);
  for (auto& g : inv.gpus) g.fabric = fabric;
  inv.gpus[3].fabric.reset();  // a GPU still registering does not count
  EXPECT_THAT(
      ComputeNodeLabels({.nvidia = inv}),
      Contains(Pair("nvidia.com/gpu.clique", "6d9a5c4e-0a2b-4c1d-9e8f-1a2b3c4d5e6f.32766")));
  inv.gpus[1].fabric->clique_id = 1;  // two cliques: no label
  EXPECT_THAT(ComputeNodeLabels({.nvidia = inv}), Not(Contains(Key("nvidia.com/gpu.clique"))));
  EXPECT_THAT(ComputeNodeLabels({.nvidia = H100s(2)}), Not(Contains(Key("nvidia.com/gpu.clique"))));
}

// A MIG device with GFD's attributes (nvmlDeviceGetAttributes of a 1g.10gb on an H100).
hw::MigDevice Mig1g10gb(const std::string& uuid) {
  return {.uuid = uuid,
          .profile = "1g.10gb",
          .memory_bytes = 9984ull << 20,
          .multiprocessor_count = 16,
          .gpu_instance_slices = 1,
          .compute_instance_slices = 1,
          .copy_engines = 1,
          .decoders = 1,
          .encoders = 0,
          .jpeg_engines = 1,
          .ofa_engines = 0,
          .has_attributes = true};
}

// Strategy single with every GPU in one profile: the MIG devices are nvidia.com/gpu, with the
// attribute labels of the first; family and compute capability stay the whole GPU's.
TEST(NodeLabelsTest, MigSingleDescribesTheMigDevices) {
  hw::Inventory inv = H100s(2);
  for (auto& g : inv.gpus) {
    g.mig_enabled = true;
    for (int m = 0; m < 7; ++m)
      g.mig_devices.push_back(Mig1g10gb(absl::StrCat("MIG-", g.index, m)));
  }
  const NodeLabels labels =
      ComputeNodeLabels({.nvidia = inv, .plugin_config = {.mig_strategy = MigStrategy::kSingle}});
  for (const auto& [key, value] : NodeLabels{
           {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"},
           {"nvidia.com/gpu.count", "14"},
           {"nvidia.com/gpu.replicas", "1"},
           {"nvidia.com/gpu.sharing-strategy", "none"},
           {"nvidia.com/gpu.memory", "9984"},
           {"nvidia.com/gpu.multiprocessors", "16"},
           {"nvidia.com/gpu.slices.gi", "1"},
           {"nvidia.com/gpu.slices.ci", "1"},
           {"nvidia.com/gpu.engines.copy", "1"},
           {"nvidia.com/gpu.engines.decoder", "1"},
           {"nvidia.com/gpu.engines.encoder", "0"},
           {"nvidia.com/gpu.engines.jpeg", "1"},
           {"nvidia.com/gpu.engines.ofa", "0"},
           {"nvidia.com/gpu.family", "hopper"},
           {"nvidia.com/gpu.compute.major", "9"},
           {"nvidia.com/mig.strategy", "single"},
       }) {
    EXPECT_THAT(labels, Contains(Pair(key, value)));
  }
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
  auto unreadable = [](hw::Inventory inv) {
    inv.gpus[0].mig_unreadable = "nvmlDeviceGetGpuInstanceById: no permission";
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
      {"MIG devices that cannot be read", unreadable(with_mig(H100s(1), 0, {""}))},
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

// Strategy mixed: every label GFD writes per profile, named nvidia.com/mig-<profile> ('+' as
// '.'); the whole GPUs, all in MIG mode, are labelled without sharing (replicas 0) even when
// nvidia.com/gpu is time-sliced, while a MIG resource's own rule shares it.
TEST(NodeLabelsTest, MigMixedPerProfileLabels) {
  hw::Inventory inv = H100s(1);
  inv.gpus[0].mig_enabled = true;
  hw::MigDevice media = Mig1g10gb("MIG-c");
  media.profile = "1g.10gb+me";
  media.ofa_engines = 1;
  inv.gpus[0].mig_devices = {Mig1g10gb("MIG-a"), Mig1g10gb("MIG-b"), media};
  DevicePluginConfig config{.mig_strategy = MigStrategy::kMixed,
                            .sharing_strategy = SharingStrategy::kTimeSlicing};
  config.sharing = {{.resource = "nvidia.com/gpu", .replicas = 4},
                    {.resource = "nvidia.com/mig-1g.10gb", .replicas = 2}};
  const NodeLabels labels = ComputeNodeLabels({.nvidia = inv, .plugin_config = config});
  for (const auto& [key, value] : NodeLabels{
           {"nvidia.com/mig-1g.10gb.product", "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb-SHARED"},
           {"nvidia.com/mig-1g.10gb.count", "2"},
           {"nvidia.com/mig-1g.10gb.replicas", "2"},
           {"nvidia.com/mig-1g.10gb.sharing-strategy", "time-slicing"},
           {"nvidia.com/mig-1g.10gb.memory", "9984"},
           {"nvidia.com/mig-1g.10gb.multiprocessors", "16"},
           {"nvidia.com/mig-1g.10gb.slices.gi", "1"},
           {"nvidia.com/mig-1g.10gb.slices.ci", "1"},
           {"nvidia.com/mig-1g.10gb.engines.copy", "1"},
           {"nvidia.com/mig-1g.10gb.engines.decoder", "1"},
           {"nvidia.com/mig-1g.10gb.engines.encoder", "0"},
           {"nvidia.com/mig-1g.10gb.engines.jpeg", "1"},
           {"nvidia.com/mig-1g.10gb.engines.ofa", "0"},
           {"nvidia.com/mig-1g.10gb.me.product", "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb.me"},
           {"nvidia.com/mig-1g.10gb.me.count", "1"},
           {"nvidia.com/mig-1g.10gb.me.replicas", "1"},
           {"nvidia.com/mig-1g.10gb.me.sharing-strategy", "none"},
           {"nvidia.com/mig-1g.10gb.me.engines.ofa", "1"},
           {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
           {"nvidia.com/gpu.count", "1"},
           {"nvidia.com/gpu.replicas", "0"},
           {"nvidia.com/gpu.sharing-strategy", "none"},
           {"nvidia.com/mig.strategy", "mixed"},
       }) {
    EXPECT_THAT(labels, Contains(Pair(key, value)));
  }
}

// Time-slicing: replicas and strategy from the rule; "-SHARED" only without a rename, but the
// replicas and strategy stay under a rename (GFD looks the rule up by the original name).
// A MIG device whose profile could not be read gets no nvidia.com/mig-<profile> labels.
TEST(NodeLabelsTest, MigMixedLeavesOutDevicesThatCannotBeRead) {
  hw::Inventory inv = H100s(2);
  inv.gpus[0].mig_enabled = true;
  inv.gpus[0].mig_devices = {Mig1g10gb("MIG-a")};
  inv.gpus[1].mig_enabled = true;
  inv.gpus[1].mig_unreadable = "nvmlDeviceGetGpuInstanceById: no permission";
  inv.gpus[1].mig_devices = {{.uuid = "MIG-x"}};
  const NodeLabels labels =
      ComputeNodeLabels({.nvidia = inv, .plugin_config = {.mig_strategy = MigStrategy::kMixed}});
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/mig-1g.10gb.count", "1")));
  for (const auto& [key, value] : labels) {
    EXPECT_FALSE(absl::StartsWith(key, "nvidia.com/mig-.")) << key;
  }
}

TEST(NodeLabelsTest, TimeSlicingMarksSharedAndReplicas) {
  DevicePluginConfig config{.sharing_strategy = SharingStrategy::kTimeSlicing};
  config.sharing = {{.resource = "nvidia.com/gpu", .replicas = 4}};
  NodeLabels labels = ComputeNodeLabels({.nvidia = H100s(2), .plugin_config = config});
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3-SHARED")));
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.replicas", "4")));
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.sharing-strategy", "time-slicing")));

  DevicePluginConfig by_default = config;
  by_default.rename_by_default = true;
  DevicePluginConfig named = config;
  named.sharing[0].rename = "nvidia.com/gpu-shared";
  for (const DevicePluginConfig& renamed : {by_default, named}) {
    labels = ComputeNodeLabels({.nvidia = H100s(2), .plugin_config = renamed});
    EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3")));
    EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.replicas", "4")));
    EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.sharing-strategy", "time-slicing")));
  }

  // One replica is not sharing.
  config.sharing = {{.resource = "nvidia.com/gpu", .replicas = 1}};
  labels = ComputeNodeLabels({.nvidia = H100s(2), .plugin_config = config});
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3")));
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.replicas", "1")));
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.sharing-strategy", "none")));
}

// A node mixing models is labelled after the model most GPUs have; its count is that model's.
TEST(NodeLabelsTest, MixedModelsAreLabelledAfterTheMajority) {
  hw::Inventory inv = H100s(3);
  inv.gpus[0].product = "NVIDIA H100 NVL";
  inv.gpus[0].memory_bytes = 95830ull << 20;
  const NodeLabels labels = ComputeNodeLabels({.nvidia = inv});
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3")));
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.count", "2")));
  EXPECT_THAT(labels, Contains(Pair("nvidia.com/gpu.memory", "81559")));
}

// Command-line flags over the configuration's flags.gfd over GFD's defaults.
TEST(NodeLabelsTest, GfdSettingsPrecedence) {
  auto defaults = ResolveGfdSettings({}, {});
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_TRUE(defaults->timestamp);
  EXPECT_EQ(defaults->interval, absl::Seconds(60));
  EXPECT_EQ(defaults->machine_type_file, "/sys/class/dmi/id/product_name");

  const GfdFlags config{.no_timestamp = true,
                        .sleep_interval = absl::Seconds(30),
                        .machine_type_file = "/etc/machine-type"};
  auto from_config = ResolveGfdSettings(config, {});
  ASSERT_TRUE(from_config.ok()) << from_config.status();
  EXPECT_FALSE(from_config->timestamp);
  EXPECT_EQ(from_config->interval, absl::Seconds(30));
  EXPECT_EQ(from_config->machine_type_file, "/etc/machine-type");

  auto from_flags = ResolveGfdSettings(config, {.no_timestamp = false,
                                                .sleep_interval = absl::Minutes(2),
                                                .machine_type_file = "/opt/type"});
  ASSERT_TRUE(from_flags.ok()) << from_flags.status();
  EXPECT_TRUE(from_flags->timestamp);
  EXPECT_EQ(from_flags->interval, absl::Minutes(2));
  EXPECT_EQ(from_flags->machine_type_file, "/opt/type");

  auto bad = ResolveGfdSettings({.sleep_interval = absl::Milliseconds(10)}, {});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("flags.gfd.sleepInterval: 10ms"));
  bad = ResolveGfdSettings({}, {.sleep_interval = absl::ZeroDuration()});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("--sleep-interval"));
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
