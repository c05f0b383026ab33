// NVIDIA's documented device plugin configurations (testdata/README.md) load unchanged and
// mean what NVIDIA documents, down to the resources a node advertises.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "agent/deviceplugin/config.h"
#include "agent/deviceplugin/resources.h"
#include "common/files.h"

namespace gpuop::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

DevicePluginConfig Load(const std::string& name) {
  absl::StatusOr<std::string> text =
      common::ReadFile(std::filesystem::path(GPUOP_DEVICEPLUGIN_TESTDATA) / name);
  EXPECT_TRUE(text.ok()) << text.status();
  absl::StatusOr<DevicePluginConfig> config = ParseDevicePluginConfig(text.value_or(""), name);
  EXPECT_TRUE(config.ok()) << config.status();
  return config.value_or(DevicePluginConfig{});
}

hw::Gpu Gpu(int index, std::string product = "NVIDIA H100 80GB HBM3") {
  return {.vendor = hw::Vendor::kNvidia,
          .index = index,
          .uuid = absl::StrCat("GPU-00000000-0000-0000-0000-00000000000", index),
          .pci_bus_id = absl::StrCat("0000:1", index, ":00.0"),
          .product = std::move(product)};
}

hw::Gpu MigGpu(int index, std::vector<std::string> profiles) {
  hw::Gpu gpu = Gpu(index, "NVIDIA A100-SXM4-40GB");
  gpu.mig_capable = gpu.mig_enabled = true;
  for (size_t i = 0; i < profiles.size(); ++i) {
    gpu.mig_devices.push_back(
        {.uuid = absl::StrCat("MIG-", index, "-", i), .profile = profiles[i]});
  }
  return gpu;
}

TEST(NvidiaConfigTest, PluginFlags) {
  const DevicePluginConfig config = Load("plugin-flags.yaml");
  EXPECT_EQ(config.mig_strategy, MigStrategy::kNone);
  EXPECT_TRUE(config.fail_on_init_error);
  EXPECT_EQ(config.nvidia_driver_root, "/");
  EXPECT_FALSE(config.pass_device_specs);
  EXPECT_EQ(config.device_list.list, std::vector{DeviceListStrategy::kEnvVar});
  EXPECT_EQ(config.device_id_strategy, DeviceIdStrategy::kUuid);
  EXPECT_THAT(config.not_acted_on, IsEmpty());
}

TEST(NvidiaConfigTest, GfdFlagsAreReadAndTheOutputFileIsNamedAsNotActedOn) {
  const DevicePluginConfig config = Load("gfd-flags.yaml");
  EXPECT_EQ(config.gfd.sleep_interval, absl::Seconds(60));
  EXPECT_FALSE(config.gfd.no_timestamp);
  EXPECT_FALSE(config.gfd.oneshot);
  EXPECT_THAT(config.not_acted_on, ElementsAre(HasSubstr("flags.gfd.outputFile")));
}

TEST(NvidiaConfigTest, TimeSlicingTenReplicasOfEveryGpu) {
  const DevicePluginConfig config = Load("time-slicing.yaml");
  EXPECT_EQ(config.sharing_strategy, SharingStrategy::kTimeSlicing);
  auto plan = PlanResources({Gpu(0), Gpu(1)}, config);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::vector<std::string> ids = plan->Ids("nvidia.com/gpu");
  ASSERT_EQ(ids.size(), 20u);
  EXPECT_EQ(ids[0], "GPU-00000000-0000-0000-0000-000000000000::0") << "NVIDIA's replica IDs";
  EXPECT_EQ(plan->Replicas("nvidia.com/gpu"), 10);
}

TEST(NvidiaConfigTest, RenameByDefaultAdvertisesGpuShared) {
  const DevicePluginConfig config = Load("time-slicing-rename.yaml");
  EXPECT_TRUE(config.fail_requests_greater_than_one);
  auto plan = PlanResources({Gpu(0)}, config);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->resources.contains("nvidia.com/gpu"));
  EXPECT_EQ(plan->Ids("nvidia.com/gpu.shared").size(), 10u);
}

TEST(NvidiaConfigTest, MigMixedReplicasPerProfile) {
  const DevicePluginConfig config = Load("time-slicing-mig-mixed.yaml");
  EXPECT_EQ(config.mig_strategy, MigStrategy::kMixed);
  auto plan = PlanResources({MigGpu(0, {"1g.5gb", "1g.5gb", "3g.20gb"}), Gpu(1)}, config);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->Ids("nvidia.com/mig-1g.5gb").size(), 4u);
  EXPECT_EQ(plan->Ids("nvidia.com/mig-3g.20gb").size(), 3u);
  EXPECT_EQ(plan->Ids("nvidia.com/gpu").size(), 8u);
  EXPECT_THAT(plan->warnings, ElementsAre(HasSubstr("no nvidia.com/mig-2g.10gb"),
                                          HasSubstr("no nvidia.com/mig-7g.40gb")));
}

TEST(NvidiaConfigTest, MpsTenReplicasOfEveryGpu) {
  const DevicePluginConfig config = Load("mps.yaml");
  EXPECT_EQ(config.sharing_strategy, SharingStrategy::kMps);
  EXPECT_TRUE(config.fail_requests_greater_than_one);
  EXPECT_EQ(config.mps_root, "/run/nvidia/mps");
  auto plan = PlanResources({Gpu(0), Gpu(1)}, config);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::vector<PluginDevice>& devices = plan->resources.at("nvidia.com/gpu");
  ASSERT_EQ(devices.size(), 20u);
  EXPECT_EQ(devices[0].id, "GPU-00000000-0000-0000-0000-000000000000::0");
  EXPECT_TRUE(devices[0].mps);
  EXPECT_EQ(MpsShares(*plan), (std::map<std::string, std::map<std::string, int>>{
                                  {"nvidia.com/gpu",
                                   {{"GPU-00000000-0000-0000-0000-000000000000", 10},
                                    {"GPU-00000000-0000-0000-0000-000000000001", 10}}}}));
}

TEST(NvidiaConfigTest, MpsRenameByDefaultAdvertisesGpuShared) {
  const DevicePluginConfig config = Load("mps-rename.yaml");
  auto plan = PlanResources({Gpu(0)}, config);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->resources.contains("nvidia.com/gpu"));
  EXPECT_EQ(plan->Ids("nvidia.com/gpu.shared").size(), 4u);
  EXPECT_THAT(MpsShares(*plan), ElementsAre(::testing::Key("nvidia.com/gpu.shared")));
}

TEST(NvidiaConfigTest, MpsOnMigDevicesIsRefused) {
  DevicePluginConfig config = Load("mps.yaml");
  config.mig_strategy = MigStrategy::kSingle;
  auto plan = PlanResources({MigGpu(0, {"1g.5gb", "1g.5gb"})}, config);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()),
              HasSubstr("sharing.mps.resources[0]: MPS sharing is not supported for MIG devices"));
}

TEST(NvidiaConfigTest, MpsReplicasBeyondAnOlderGpusClientLimitAreRefused) {
  DevicePluginConfig config = Load("mps.yaml");
  config.sharing[0].replicas = 20;
  hw::Gpu volta = Gpu(0, "Tesla V100-SXM2-16GB");
  volta.compute_major = 7;
  volta.compute_minor = 0;
  auto plan = PlanResources({volta}, config);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()),
              HasSubstr("sharing.mps.resources[0].replicas: 20 is more than the 16 clients"));
  hw::Gpu hopper = Gpu(0);
  hopper.compute_major = 9;
  EXPECT_TRUE(PlanResources({hopper}, config).ok());
}

TEST(NvidiaConfigTest, DeviceListStrategiesAsAListWithImex) {
  const DevicePluginConfig config = Load("device-list-strategies.yaml");
  EXPECT_EQ(config.device_list.list,
            (std::vector{DeviceListStrategy::kCdiAnnotations, DeviceListStrategy::kEnvVar}));
  EXPECT_FALSE(config.device_list.AllCdi());
  EXPECT_EQ(config.cdi_annotation_prefix, "cdi.example.com/");
  EXPECT_EQ(config.device_id_strategy, DeviceIdStrategy::kIndex);
  EXPECT_EQ(config.imex_channel_ids, std::vector{0});
  EXPECT_FALSE(config.imex_required);
}

TEST(NvidiaConfigTest, ResourcePatternsRenamesCountsListsAndMigIndices) {
  const DevicePluginConfig config = Load("resources-and-devices.yaml");
  ASSERT_EQ(config.gpu_resources.size(), 2u);
  EXPECT_EQ(config.gpu_resources[0].name, "nvidia.com/h100") << "names get nvidia.com/";
  ASSERT_EQ(config.sharing.size(), 3u);
  EXPECT_EQ(config.sharing[0].devices.count, 2);
  EXPECT_EQ(config.sharing[0].rename, "nvidia.com/h100-shared");
  auto plan = PlanResources({Gpu(0), Gpu(1), Gpu(2), Gpu(3), Gpu(4),
                             MigGpu(5, {"1g.10gb", "1g.10gb"}), Gpu(6, "NVIDIA L4")},
                            config);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // The first two H100s (a count), 4 replicas each, under the rule's own name.
  EXPECT_EQ(plan->Ids("nvidia.com/h100-shared").size(), 8u);
  // GPU 2 unshared; GPU 3 (an index) and GPU 4 (a UUID), 2 replicas each.
  EXPECT_THAT(plan->Ids("nvidia.com/h100"),
              ElementsAre("GPU-00000000-0000-0000-0000-000000000002",
                          "GPU-00000000-0000-0000-0000-000000000003::0",
                          "GPU-00000000-0000-0000-0000-000000000003::1",
                          "GPU-00000000-0000-0000-0000-000000000004::0",
                          "GPU-00000000-0000-0000-0000-000000000004::1"));
  // The L4 falls through to the catch-all pattern.
  EXPECT_THAT(plan->Ids("nvidia.com/gpu"), ElementsAre("GPU-00000000-0000-0000-0000-000000000006"));
  // MIG device 5:0 (a MIG index) three times, 5:1 as it is.
  EXPECT_THAT(plan->Ids("nvidia.com/mig-small"),
              ElementsAre("MIG-5-0::0", "MIG-5-0::1", "MIG-5-0::2", "MIG-5-1"));
}

TEST(NvidiaConfigTest, PatternsMatchAnywhereWithWildcards) {
  EXPECT_TRUE(PatternMatches("*H100*", "NVIDIA H100 80GB HBM3"));
  EXPECT_TRUE(PatternMatches("H100", "NVIDIA H100 80GB HBM3")) << "unanchored, as NVIDIA's";
  EXPECT_TRUE(PatternMatches("A100*40GB", "NVIDIA A100-SXM4-40GB"));
  EXPECT_FALSE(PatternMatches("A100*80GB", "NVIDIA A100-SXM4-40GB"));
  EXPECT_TRUE(PatternMatches("1g.10gb", "1g.10gb"));
  EXPECT_FALSE(PatternMatches("1g.*gb", "2g.20gb"));
}

TEST(NvidiaConfigTest, TwoRulesSharingOneDeviceAreAnError) {
  DevicePluginConfig config;
  config.sharing = {
      {.resource = "nvidia.com/gpu", .devices = {.all = false, .count = 2}, .replicas = 2},
      {.resource = "nvidia.com/gpu", .devices = {.all = false, .list = {"1"}}, .replicas = 3}};
  auto plan = PlanResources({Gpu(0), Gpu(1), Gpu(2)}, config);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()),
              HasSubstr("sharing.timeSlicing.resources[1].devices: "
                        "GPU-00000000-0000-0000-0000-000000000001 is shared by an earlier rule"));
}

}  // namespace
}  // namespace gpuop::agent
