// GPU feature discovery's complete label set for each machine the fake NVML plays (its preset
// scenarios, test/fakes/nvml/scenarios), discovered through the real NVML backend. Every
// expected value is derived from the scenario by GFD's documented rules, named beside it; the
// AMD presets' sets are in hw/amd/amd_labels_test.cc. SIMULATED: no GPU is involved.

#include <cctype>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include "absl/time/time.h"
#include "agent/labels/gfd_test_labels.h"
#include "agent/labels/labels.h"
#include "hw/nvml/nvml_accelerator.h"
#include "test/fakes/sysfs/fake_sysfs.h"
#include "test/fakes/sysfs/presets.h"

namespace gpuop::agent {
namespace {

constexpr int64_t kNow = 1764676800;

// What GFD writes on every node of these presets (driver 570.86.15, CUDA 12.8), with
// gfd.timestamp in Unix seconds.
NodeLabels Common(NodeLabels specific) {
  specific["nvidia.com/gfd.timestamp"] = "1764676800";
  return gfd_test::WithDriver570Labels(std::move(specific));
}

// The labels of one MIG profile under mixed (GFD: product "<parent model>-MIG-<profile>",
// count of devices, replicas 1 and strategy none without a sharing rule, then the first
// device's nvmlDeviceGetAttributes: memory MiB, multiprocessors, GI and CI slices, engines).
void AddMixedProfile(NodeLabels& labels, const std::string& profile, const std::string& count,
                     std::vector<std::string> attributes) {
  const std::string p = "nvidia.com/mig-" + profile + ".";
  labels[p + "product"] = "NVIDIA-A100-SXM4-40GB-MIG-" + profile;
  labels[p + "count"] = count;
  labels[p + "replicas"] = "1";
  labels[p + "sharing-strategy"] = "none";
  const char* keys[] = {"memory",          "multiprocessors", "slices.gi",
                        "slices.ci",       "engines.copy",    "engines.decoder",
                        "engines.encoder", "engines.jpeg",    "engines.ofa"};
  for (size_t i = 0; i < attributes.size(); ++i) labels[p + keys[i]] = attributes[i];
}

// The A100 preset's whole GPUs: eight "NVIDIA A100-SXM4-40GB" (spaces as '-'), 40960 MiB,
// compute capability 8.0 (ampere), 3D controllers (gpu.mode compute), machine "DGX A100".
NodeLabels A100Whole(const std::string& replicas, const std::string& sharing) {
  return Common({
      {"nvidia.com/gpu.compute.major", "8"},
      {"nvidia.com/gpu.compute.minor", "0"},
      {"nvidia.com/gpu.count", "8"},
      {"nvidia.com/gpu.family", "ampere"},
      {"nvidia.com/gpu.machine", "DGX-A100"},
      {"nvidia.com/gpu.memory", "40960"},
      {"nvidia.com/gpu.mode", "compute"},
      {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB"},
      {"nvidia.com/gpu.replicas", replicas},
      {"nvidia.com/gpu.sharing-strategy", sharing},
      {"nvidia.com/mig.capable", "true"},
  });
}

// The A100 preset under mixed: its profiles (GPU 0: 7 x 1g.5gb, GPU 1: 2 x 3g.20gb, GPU 2: a
// 4g.20gb split into two 2-slice compute instances, a 2g.10gb and a 1g.5gb), attributes from
// the scenario's profile table (sm_per_slice 14 for the split compute instances).
NodeLabels A100Mixed() {
  NodeLabels labels = A100Whole("1", "none");  // GPUs 4-7 are whole: sharing applies
  labels["nvidia.com/mig.strategy"] = "mixed";
  AddMixedProfile(labels, "1g.5gb", "8", {"4864", "14", "1", "1", "1", "0", "0", "0", "0"});
  AddMixedProfile(labels, "2g.10gb", "1", {"9856", "28", "2", "2", "2", "1", "0", "0", "0"});
  AddMixedProfile(labels, "3g.20gb", "2", {"19968", "42", "3", "3", "3", "2", "0", "0", "0"});
  // A compute instance smaller than its GPU instance is "<c>c.<profile>", as GFD names it.
  AddMixedProfile(labels, "2c.4g.20gb", "2", {"19968", "28", "4", "2", "4", "2", "0", "0", "0"});
  return labels;
}

// The H100 preset: eight "NVIDIA H100 80GB HBM3", 81559 MiB, compute capability 9.0 (hopper),
// 3D controllers on the HGX board's PCI bus, machine "PowerEdge XE9680".
NodeLabels H100(NodeLabels specific) {
  specific.insert({
      {"nvidia.com/gpu.compute.major", "9"},
      {"nvidia.com/gpu.compute.minor", "0"},
      {"nvidia.com/gpu.family", "hopper"},
      {"nvidia.com/gpu.machine", "PowerEdge-XE9680"},
      {"nvidia.com/gpu.mode", "compute"},
      {"nvidia.com/mig.capable", "true"},
  });
  return Common(specific);
}

// Strategy single with every H100 carved into 7 x 1g.10gb: the MIG devices are nvidia.com/gpu
// (count 56) with the first one's attributes (9984 MiB, 16 SMs, 1 slice, 1 copy engine,
// 1 decoder, 1 JPEG engine).
NodeLabels H100Single(const std::string& product, const std::string& replicas,
                      const std::string& sharing) {
  return H100({
      {"nvidia.com/gpu.count", "56"},
      {"nvidia.com/gpu.engines.copy", "1"},
      {"nvidia.com/gpu.engines.decoder", "1"},
      {"nvidia.com/gpu.engines.encoder", "0"},
      {"nvidia.com/gpu.engines.jpeg", "1"},
      {"nvidia.com/gpu.engines.ofa", "0"},
      {"nvidia.com/gpu.memory", "9984"},
      {"nvidia.com/gpu.multiprocessors", "16"},
      {"nvidia.com/gpu.product", product},
      {"nvidia.com/gpu.replicas", replicas},
      {"nvidia.com/gpu.sharing-strategy", sharing},
      {"nvidia.com/gpu.slices.ci", "1"},
      {"nvidia.com/gpu.slices.gi", "1"},
      {"nvidia.com/mig.strategy", "single"},
  });
}

void CarveH100s(hw::NvmlAccelerator& nvml) {
  for (int gpu = 0; gpu < 8; ++gpu) {
    ASSERT_TRUE(nvml.SetMigMode(gpu, true).ok());
    for (int i = 0; i < 7; ++i) ASSERT_TRUE(nvml.CreateMigDevice(gpu, "1g.10gb").ok());
  }
}

struct PresetCase {
  const char* name;
  const char* scenario;
  const char* machine;  // DMI product_name; nullptr: no such file
  DevicePluginConfig config;
  std::function<void(hw::NvmlAccelerator&)> prepare;  // a MIG layout made through NVML
  NodeLabels expected;
};

DevicePluginConfig Config(MigStrategy strategy, std::vector<SharingRule> sharing = {},
                          bool rename_by_default = false) {
  DevicePluginConfig config{
      .mig_strategy = strategy,
      .sharing_strategy = sharing.empty() ? SharingStrategy::kNone : SharingStrategy::kTimeSlicing,
      .rename_by_default = rename_by_default};
  config.sharing = std::move(sharing);
  return config;
}

std::vector<PresetCase> Cases() {
  std::vector<PresetCase> cases;
  cases.push_back({"h100, strategy none", "h100-8x-nvswitch", "PowerEdge XE9680",
                   Config(MigStrategy::kNone), nullptr,
                   H100({
                       {"nvidia.com/gpu.count", "8"},
                       {"nvidia.com/gpu.memory", "81559"},
                       {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                       {"nvidia.com/gpu.replicas", "1"},
                       {"nvidia.com/gpu.sharing-strategy", "none"},
                   })});
  // Time-slicing 4 x without a rename: "-SHARED", replicas 4, strategy time-slicing.
  cases.push_back({"h100, time-sliced", "h100-8x-nvswitch", "PowerEdge XE9680",
                   Config(MigStrategy::kNone, {{.resource = "nvidia.com/gpu", .replicas = 4}}),
                   nullptr,
                   H100({
                       {"nvidia.com/gpu.count", "8"},
                       {"nvidia.com/gpu.memory", "81559"},
                       {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3-SHARED"},
                       {"nvidia.com/gpu.replicas", "4"},
                       {"nvidia.com/gpu.sharing-strategy", "time-slicing"},
                   })});
  // MPS 4 x: as time-slicing with strategy mps, and the node is MPS-capable (where the MPS
  // control daemon runs).
  DevicePluginConfig mps =
      Config(MigStrategy::kNone, {{.resource = "nvidia.com/gpu", .replicas = 4}});
  mps.sharing_strategy = SharingStrategy::kMps;
  mps.mps = true;
  cases.push_back({"h100, mps", "h100-8x-nvswitch", "PowerEdge XE9680", mps, nullptr,
                   H100({
                       {"nvidia.com/gpu.count", "8"},
                       {"nvidia.com/gpu.memory", "81559"},
                       {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3-SHARED"},
                       {"nvidia.com/gpu.replicas", "4"},
                       {"nvidia.com/gpu.sharing-strategy", "mps"},
                       {"nvidia.com/mps.capable", "true"},
                   })});
  cases.push_back({"h100, single, 56 x 1g.10gb", "h100-8x-nvswitch", "PowerEdge XE9680",
                   Config(MigStrategy::kSingle), CarveH100s,
                   H100Single("NVIDIA-H100-80GB-HBM3-MIG-1g.10gb", "1", "none")});
  // Time-slicing the MIG devices (they are nvidia.com/gpu under single), renamed by default:
  // no "-SHARED", but replicas and strategy stay.
  cases.push_back({"h100, single, time-sliced and renamed", "h100-8x-nvswitch", "PowerEdge XE9680",
                   Config(MigStrategy::kSingle, {{.resource = "nvidia.com/gpu", .replicas = 2}},
                          /*rename_by_default=*/true),
                   CarveH100s,
                   H100Single("NVIDIA-H100-80GB-HBM3-MIG-1g.10gb", "2", "time-slicing")});
  cases.push_back({"a100, strategy none", "a100-8x-mig", "DGX A100", Config(MigStrategy::kNone),
                   nullptr, A100Whole("1", "none")});
  // GPU 3 has MIG on without devices: GFD's invalid single labels (model of the first
  // MIG-enabled GPU + "-MIG-INVALID", count, replicas and memory 0).
  NodeLabels invalid = A100Whole("0", "none");
  invalid["nvidia.com/gpu.product"] = "NVIDIA-A100-SXM4-40GB-MIG-INVALID";
  invalid["nvidia.com/gpu.count"] = "0";
  invalid["nvidia.com/gpu.memory"] = "0";
  invalid["nvidia.com/mig.strategy"] = "single";
  cases.push_back({"a100, single, invalid layout", "a100-8x-mig", "DGX A100",
                   Config(MigStrategy::kSingle), nullptr, invalid});
  cases.push_back({"a100, mixed", "a100-8x-mig", "DGX A100", Config(MigStrategy::kMixed), nullptr,
                   A100Mixed()});
  // A time-sliced profile gets "-SHARED", replicas and strategy; the whole GPUs' rule renamed
  // gets replicas and strategy only.
  NodeLabels shared = A100Mixed();
  shared["nvidia.com/mig-1g.5gb.product"] = "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED";
  shared["nvidia.com/mig-1g.5gb.replicas"] = "3";
  shared["nvidia.com/mig-1g.5gb.sharing-strategy"] = "time-slicing";
  shared["nvidia.com/gpu.replicas"] = "2";
  shared["nvidia.com/gpu.sharing-strategy"] = "time-slicing";
  cases.push_back(
      {"a100, mixed, time-sliced", "a100-8x-mig", "DGX A100",
       Config(MigStrategy::kMixed,
              {{.resource = "nvidia.com/mig-1g.5gb", .replicas = 3},
               {.resource = "nvidia.com/gpu", .rename = "nvidia.com/gpu.shared", .replicas = 2}}),
       nullptr, shared});
  // MPS for the whole GPUs of a node whose other GPUs have MIG enabled: the whole GPUs' labels
  // say mps, but the node is not MPS-capable (GFD fails there; no MPS daemon runs).
  NodeLabels mps_mig = A100Mixed();
  mps_mig["nvidia.com/gpu.product"] = "NVIDIA-A100-SXM4-40GB-SHARED";
  mps_mig["nvidia.com/gpu.replicas"] = "2";
  mps_mig["nvidia.com/gpu.sharing-strategy"] = "mps";
  DevicePluginConfig mps_mixed =
      Config(MigStrategy::kMixed, {{.resource = "nvidia.com/gpu", .replicas = 2}});
  mps_mixed.sharing_strategy = SharingStrategy::kMps;
  mps_mixed.mps = true;
  cases.push_back(
      {"a100, mixed, mps beside MIG", "a100-8x-mig", "DGX A100", mps_mixed, nullptr, mps_mig});
  // Four "NVIDIA L4", 23034 MiB, compute capability 8.9 (ada-lovelace), not MIG-capable, no
  // DMI product name (machine "unknown").
  cases.push_back({"l4, strategy none", "l4-4x-pcie", nullptr, Config(MigStrategy::kNone), nullptr,
                   Common({
                       {"nvidia.com/gpu.compute.major", "8"},
                       {"nvidia.com/gpu.compute.minor", "9"},
                       {"nvidia.com/gpu.count", "4"},
                       {"nvidia.com/gpu.family", "ada-lovelace"},
                       {"nvidia.com/gpu.machine", "unknown"},
                       {"nvidia.com/gpu.memory", "23034"},
                       {"nvidia.com/gpu.mode", "compute"},
                       {"nvidia.com/gpu.product", "NVIDIA-L4"},
                       {"nvidia.com/gpu.replicas", "1"},
                       {"nvidia.com/gpu.sharing-strategy", "none"},
                       {"nvidia.com/mig.capable", "false"},
                   })});
  // A driver without GPUs: GFD labels nothing (gpuop removes what it set before).
  cases.push_back(
      {"no gpus", "no-gpus", "PowerEdge R760", Config(MigStrategy::kMixed), nullptr, {}});
  return cases;
}

class GfdPresetsTest : public ::testing::TestWithParam<PresetCase> {
 protected:
  void TearDown() override { unsetenv("GPUOP_FAKE_NVML_SCENARIO"); }
};

TEST_P(GfdPresetsTest, LabelsAreGfds) {
  const PresetCase& c = GetParam();
  fakes::TempDir root;
  // The node's sysfs: the HGX board's PCI bus for the H100s; for the others each GPU as a 3D
  // controller (class 0x030200) at the address NVML reports, added after a first discovery.
  const bool hgx = std::string(c.scenario) == "h100-8x-nvswitch";
  std::optional<fakes::FakeSysfs> sysfs;
  if (hgx) {
    sysfs.emplace(fakes::NvidiaHgxNode(root.path()));
  } else {
    sysfs.emplace(root.path());
  }
  if (c.machine != nullptr)
    sysfs->WriteFile("class/dmi/id/product_name", std::string(c.machine) + "\n");
  setenv("GPUOP_FAKE_NVML_SCENARIO", c.scenario, 1);
  auto nvml = hw::NvmlAccelerator::Open(
      {.library_path = GPUOP_FAKE_NVML_LIBRARY, .sysfs_root = root.string()});
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  if (c.prepare) c.prepare(**nvml);
  absl::StatusOr<hw::Inventory> inventory = (*nvml)->Discover();
  ASSERT_TRUE(inventory.ok()) << inventory.status();
  if (!hgx) {
    const uint16_t device = std::string(c.scenario) == "l4-4x-pcie" ? 0x27b8 : 0x20b0;
    for (const hw::Gpu& gpu : inventory->gpus) {
      sysfs->AddPciDevice({.address = gpu.pci_bus_id,
                           .vendor = 0x10de,
                           .device = device,
                           .class_code = 0x030200,
                           .driver = "nvidia"});
    }
    inventory = (*nvml)->Discover();
    ASSERT_TRUE(inventory.ok()) << inventory.status();
  }
  const NodeLabels labels =
      ComputeNodeLabels({.nvidia = *inventory,
                         .plugin_config = c.config,
                         .machine = MachineType(root.string() + "/class/dmi/id/product_name"),
                         .timestamp = absl::FromUnixSeconds(kNow)});
  EXPECT_EQ(labels, c.expected);
}

INSTANTIATE_TEST_SUITE_P(FakeNvmlPresets, GfdPresetsTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<PresetCase>& param_info) {
                           std::string name;
                           for (char c : std::string(param_info.param.name)) {
                             if (std::isalnum(static_cast<unsigned char>(c))) name += c;
                           }
                           return name;
                         });

}  // namespace
}  // namespace gpuop::agent
