#include "agent/deviceplugin/resources.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"

namespace gpuop::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

hw::Gpu Nvidia(int index, bool mig = false, std::vector<std::string> profiles = {}) {
  hw::Gpu g{.vendor = hw::Vendor::kNvidia,
            .index = index,
            .uuid = absl::StrCat("GPU-", index),
            .pci_bus_id = absl::StrCat("0000:0", index, ":00.0"),
            .numa_node = index / 4,
            .mig_capable = true,
            .mig_enabled = mig};
  for (size_t i = 0; i < profiles.size(); ++i) {
    g.mig_devices.push_back({.uuid = absl::StrCat("MIG-", index, "-", i), .profile = profiles[i]});
  }
  return g;
}

SharingRule Rule(std::string resource, int replicas, std::vector<std::string> devices = {}) {
  SharingRule rule{.resource = std::move(resource), .replicas = replicas};
  if (!devices.empty()) rule.devices = {.all = false, .list = std::move(devices)};
  return rule;
}

// NVIDIA's device plugin under migStrategy none: every GPU is nvidia.com/gpu, MIG mode or not.
TEST(PlanResourcesTest, NoneAdvertisesEveryGpuWhateverItsMigMode) {
  auto plan = PlanResources({Nvidia(0), Nvidia(1, true, {"1g.10gb"})}, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->Ids("nvidia.com/gpu"), (std::vector<std::string>{"GPU-0", "GPU-1"}));
  EXPECT_THAT(plan->warnings, IsEmpty());
  EXPECT_EQ(plan->resources.size(), 1u);
  const PluginDevice& d = plan->resources.at("nvidia.com/gpu")[0];
  EXPECT_EQ(d.cdi_name, "nvidia.gpuop.io/gpu=GPU-0");
  EXPECT_EQ(d.numa_node, 0);
  EXPECT_FALSE(plan->resources.at("nvidia.com/gpu")[1].mig);
}

TEST(PlanResourcesTest, MixedNamesResourcesByProfile) {
  auto plan = PlanResources({Nvidia(0, true, {"1g.10gb", "1g.10gb", "3g.40gb"}),
                             Nvidia(1, true, {"1g.5gb+me"}), Nvidia(2)},
                            {.mig_strategy = MigStrategy::kMixed});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->Ids("nvidia.com/mig-1g.10gb"), (std::vector<std::string>{"MIG-0-0", "MIG-0-1"}));
  EXPECT_EQ(plan->Ids("nvidia.com/mig-3g.40gb"), std::vector<std::string>{"MIG-0-2"});
  EXPECT_EQ(plan->Ids("nvidia.com/mig-1g.5gb.me"), std::vector<std::string>{"MIG-1-0"});
  EXPECT_EQ(plan->Ids("nvidia.com/gpu"), std::vector<std::string>{"GPU-2"});
  EXPECT_TRUE(plan->resources.at("nvidia.com/mig-1g.10gb")[0].mig);
  EXPECT_EQ(plan->resources.at("nvidia.com/mig-1g.10gb")[0].cdi_name,
            "nvidia.gpuop.io/gpu=MIG-0-0");
}

// What discovery reports for a GPU whose GPU instances NVML refuses (no MIG monitor capability).
hw::Gpu Unreadable(hw::Gpu gpu) {
  gpu.mig_unreadable = "nvmlDeviceGetGpuInstanceById: no permission";
  return gpu;
}

// A MIG device whose profile could not be read is never advertised under a made-up name.
TEST(PlanResourcesTest, MixedAdvertisesNoMigDeviceThatCannotBeRead) {
  auto plan = PlanResources({Unreadable(Nvidia(0, true, {"", ""})), Nvidia(1, true, {"1g.10gb"})},
                            {.mig_strategy = MigStrategy::kMixed});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->Ids("nvidia.com/mig-1g.10gb"), std::vector<std::string>{"MIG-1-0"});
  EXPECT_EQ(plan->resources.size(), 1u);
  EXPECT_THAT(plan->warnings,
              ElementsAre(HasSubstr("GPU 0 (GPU-0)'s MIG devices cannot be read (nvmlDeviceGetGpu"
                                    "InstanceById: no permission); none is advertised")));
}

TEST(PlanResourcesTest, MixedSkipsAMigGpuWithoutMigDevices) {
  auto plan = PlanResources({Nvidia(0, true), Nvidia(1)}, {.mig_strategy = MigStrategy::kMixed});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->Ids("nvidia.com/gpu"), std::vector<std::string>{"GPU-1"});
  EXPECT_THAT(plan->warnings, ElementsAre(HasSubstr("GPU 0 (GPU-0) has MIG enabled but no MIG")));
}

// The layouts of migStrategy single, as NVIDIA's device plugin (internal/rm/device_map.go) and
// GFD (internal/lm/mig-strategy.go) treat them: no MIG-enabled GPU means whole GPUs; all GPUs in
// MIG mode with one profile means MIG devices; anything else is invalid (GFD: count 0).
TEST(PlanResourcesTest, SingleLayouts) {
  struct Case {
    const char* name;
    std::vector<hw::Gpu> gpus;
    std::vector<std::string> want;  // nvidia.com/gpu
    const char* invalid;            // substring of mig_invalid; "" when valid
  };
  const Case cases[] = {
      {"no MIG: whole GPUs", {Nvidia(0), Nvidia(1)}, {"GPU-0", "GPU-1"}, ""},
      {"one profile everywhere",
       {Nvidia(0, true, {"1g.10gb"}), Nvidia(1, true, {"1g.10gb", "1g.10gb"})},
       {"MIG-0-0", "MIG-1-0", "MIG-1-1"},
       ""},
      {"two profiles",
       {Nvidia(0, true, {"1g.10gb"}), Nvidia(1, true, {"2g.20gb"})},
       {},
       "MIG devices of more than one profile (1g.10gb, 2g.20gb)"},
      {"MIG on and off",
       {Nvidia(0, true, {"1g.10gb"}), Nvidia(1), Nvidia(2)},
       {},
       "GPUs with MIG enabled (0) and with MIG disabled (1, 2) on one node"},
      {"MIG on without devices",
       {Nvidia(0, true, {"1g.10gb"}), Nvidia(1, true)},
       {},
       "GPU 1 (GPU-1) has MIG enabled but no MIG devices"},
      {"MIG devices that cannot be read",
       {Nvidia(0, true, {"1g.10gb"}), Unreadable(Nvidia(1, true, {""}))},
       {},
       "GPU 1 (GPU-1)'s MIG devices cannot be read: nvmlDeviceGetGpuInstanceById: no permission"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto plan = PlanResources(c.gpus, {.mig_strategy = MigStrategy::kSingle});
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_TRUE(plan->resources.contains("nvidia.com/gpu"));
    EXPECT_EQ(plan->resources.size(), 1u);
    EXPECT_EQ(plan->Ids("nvidia.com/gpu"), c.want);
    if (*c.invalid == '\0') {
      EXPECT_EQ(plan->mig_invalid, "");
      EXPECT_THAT(plan->warnings, IsEmpty());
    } else {
      EXPECT_THAT(plan->mig_invalid, HasSubstr(c.invalid));
      EXPECT_THAT(plan->warnings, ElementsAre(HasSubstr(c.invalid)));
    }
  }
}

TEST(PlanResourcesTest, TimeSlicingOnAnInvalidSingleLayoutReplicatesNothing) {
  DevicePluginConfig config{.mig_strategy = MigStrategy::kSingle};
  config.sharing = {Rule("nvidia.com/gpu", 2, {"0"})};
  auto plan = PlanResources({Nvidia(0, true, {"1g.10gb"}), Nvidia(1)}, config);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->Ids("nvidia.com/gpu"), IsEmpty());
  EXPECT_FALSE(plan->mig_invalid.empty());
}

TEST(ClassifyMigSingleTest, NamesTheFirstMigGpuAndIgnoresOtherVendors) {
  hw::Gpu amd{.vendor = hw::Vendor::kAmd, .index = 0, .pci_bus_id = "0000:19:00.0"};
  const std::vector<hw::Gpu> gpus = {amd, Nvidia(1), Nvidia(2, true, {"3g.40gb"})};
  const MigSingleLayout layout = ClassifyMigSingle(gpus);
  EXPECT_EQ(layout.kind, MigSingleLayout::Kind::kInvalid);
  ASSERT_NE(layout.first_mig_gpu, nullptr);
  EXPECT_EQ(layout.first_mig_gpu->uuid, "GPU-2");
  EXPECT_EQ(ClassifyMigSingle({amd, Nvidia(1)}).kind, MigSingleLayout::Kind::kWholeGpus);
  const MigSingleLayout mig = ClassifyMigSingle({Nvidia(0, true, {"3g.40gb", "3g.40gb"})});
  EXPECT_EQ(mig.kind, MigSingleLayout::Kind::kMigDevices);
  EXPECT_EQ(mig.profile, "3g.40gb");
}

TEST(PlanResourcesTest, TimeSlicingPerGpuReplicas) {
  DevicePluginConfig config;
  config.sharing = {Rule("nvidia.com/gpu", 2, {"0"}), Rule("nvidia.com/gpu", 3, {"GPU-1"})};
  auto plan = PlanResources({Nvidia(0), Nvidia(1), Nvidia(2)}, config);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->Ids("nvidia.com/gpu"),
              ::testing::UnorderedElementsAre("GPU-0::0", "GPU-0::1", "GPU-1::0", "GPU-1::1",
                                              "GPU-1::2", "GPU-2"));
  EXPECT_EQ(plan->Replicas("nvidia.com/gpu"), 3);
  for (const auto& d : plan->resources.at("nvidia.com/gpu")) {
    if (d.gpu_index == 1) {
      EXPECT_EQ(d.replicas, 3);
    }
    EXPECT_EQ(d.cdi_name, "nvidia.gpuop.io/gpu=" + d.physical_id);
  }
}

TEST(PlanResourcesTest, TimeSlicingRenamesToShared) {
  DevicePluginConfig config{.rename_by_default = true};
  config.sharing = {{.resource = "nvidia.com/gpu", .replicas = 4}};
  auto plan = PlanResources({Nvidia(0), Nvidia(1)}, config);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->resources.contains("nvidia.com/gpu"));
  EXPECT_EQ(plan->Ids("nvidia.com/gpu.shared").size(), 8u);
}

TEST(PlanResourcesTest, RuleForAMissingDeviceIsAnError) {
  DevicePluginConfig config;
  config.sharing = {Rule("nvidia.com/gpu", 2, {"7"})};
  auto plan = PlanResources({Nvidia(0)}, config);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(plan.status().message()),
              HasSubstr("sharing.timeSlicing.resources[0].devices: \"7\""));
}

TEST(PlanResourcesTest, AmdGpusByPciAddress) {
  hw::Gpu amd{
      .vendor = hw::Vendor::kAmd, .index = 0, .uuid = "0x1234", .pci_bus_id = "0000:19:00.0"};
  auto plan = PlanResources({amd}, {});
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->Ids("amd.com/gpu"), std::vector<std::string>{"0000:19:00.0"});
  EXPECT_EQ(plan->resources.at("amd.com/gpu")[0].cdi_name, "amd.com/gpu=0000:19:00.0");
}

TEST(PlanResourcesTest, MigResourceNames) {
  EXPECT_EQ(MigResourceName("1g.10gb"), "nvidia.com/mig-1g.10gb");
  EXPECT_EQ(MigResourceName("1g.10gb+me"), "nvidia.com/mig-1g.10gb.me");
}

}  // namespace
}  // namespace gpuop::agent
