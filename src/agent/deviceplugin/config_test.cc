#include "agent/deviceplugin/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuop::agent {
namespace {

using ::testing::HasSubstr;

TEST(DevicePluginConfigTest, EmptyIsTheDefault) {
  auto config = ParseDevicePluginConfig("", "f");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->mig_strategy, MigStrategy::kNone);
  EXPECT_EQ(config->device_list.Strategies(),
            (std::vector{DeviceListStrategy::kCdiCri, DeviceListStrategy::kCdiAnnotations}));
  EXPECT_FALSE(config->device_list.cdi_fallback);
  EXPECT_EQ(config->device_id_strategy, DeviceIdStrategy::kUuid);
  EXPECT_TRUE(config->fail_on_init_error);
  EXPECT_EQ(config->cdi_annotation_prefix, "cdi.k8s.io/");
  EXPECT_TRUE(config->not_acted_on.empty());
  EXPECT_FALSE(config->Shared());
}

TEST(DevicePluginConfigTest, NvidiaFormatWithPerGpuReplicas) {
  auto config = ParseDevicePluginConfig(R"(
version: v1
flags:
  migStrategy: mixed
  deviceListStrategy: both
sharing:
  timeSlicing:
    renameByDefault: true
    failRequestsGreaterThanOne: true
    resources:
    - name: nvidia.com/gpu
      replicas: 4
      devices: ["0", "1"]
    - name: nvidia.com/gpu
      replicas: 8
      devices: ["GPU-abc"]
    - name: nvidia.com/mig-1g.10gb
      replicas: 2
)",
                                        "cm/a100");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->mig_strategy, MigStrategy::kMixed);
  EXPECT_EQ(config->device_list.list,
            (std::vector{DeviceListStrategy::kCdiCri, DeviceListStrategy::kCdiAnnotations,
                         DeviceListStrategy::kEnvVar}));
  EXPECT_TRUE(config->device_list.cdi_fallback) << "gpuop's both";
  EXPECT_TRUE(config->rename_by_default);
  EXPECT_TRUE(config->fail_requests_greater_than_one);
  ASSERT_EQ(config->sharing.size(), 3u);
  EXPECT_EQ(config->sharing[1].replicas, 8);
  EXPECT_EQ(config->sharing[1].devices.list, std::vector<std::string>{"GPU-abc"});
  EXPECT_TRUE(config->sharing[2].devices.all);
  EXPECT_EQ(config->SharedName(config->sharing[2]), "nvidia.com/mig-1g.10gb.shared");
  EXPECT_EQ(config->sharing_strategy, SharingStrategy::kTimeSlicing);
}

TEST(DevicePluginConfigTest, MpsRefusesRequestsForMoreThanOneReplicaUnlessAllowed) {
  auto config = ParseDevicePluginConfig(
      "flags:\n  mpsRoot: /var/run/mps\nsharing:\n  mps:\n    resources:\n"
      "    - name: gpu\n      replicas: 3\n",
      "f");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->sharing_strategy, SharingStrategy::kMps);
  EXPECT_TRUE(config->fail_requests_greater_than_one) << "NVIDIA's default under MPS";
  EXPECT_EQ(config->mps_root, "/var/run/mps");
  EXPECT_EQ(config->SharingField(), "sharing.mps");
  EXPECT_TRUE(config->not_acted_on.empty());

  config = ParseDevicePluginConfig(
      "sharing:\n  mps:\n    failRequestsGreaterThanOne: false\n    resources:\n"
      "    - name: gpu\n      replicas: 3\n",
      "f");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->fail_requests_greater_than_one);
  EXPECT_EQ(config->mps_root, kDefaultMpsRoot);

  config = ParseDevicePluginConfig(
      "sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: 3\n", "f");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->fail_requests_greater_than_one) << "NVIDIA's default under time-slicing";
  EXPECT_EQ(config->SharingField(), "sharing.timeSlicing");
}

TEST(DevicePluginConfigTest, MpsClientLimitFollowsNvidiasComputeCapabilityRule) {
  EXPECT_EQ(MpsMaxClients(9, 0), 48);
  EXPECT_EQ(MpsMaxClients(7, 5), 48);
  EXPECT_EQ(MpsMaxClients(7, 0), 16);
  EXPECT_EQ(MpsMaxClients(6, 1), 16);
}

struct BadConfig {
  const char* name;
  const char* yaml;
  const char* message;
};

void PrintTo(const BadConfig& c, std::ostream* os) { *os << c.name; }

class DevicePluginConfigErrorTest : public ::testing::TestWithParam<BadConfig> {};

TEST_P(DevicePluginConfigErrorTest, NamesSourceAndField) {
  auto config = ParseDevicePluginConfig(GetParam().yaml, "cm/x");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("config cm/x: "));
  EXPECT_THAT(std::string(config.status().message()), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, DevicePluginConfigErrorTest,
    ::testing::Values(
        BadConfig{"Version", "version: v2\n", "version: \"v2\" is not v1"},
        BadConfig{"Typo", "flags:\n  migStrategie: mixed\n", "flags.migStrategie: unknown field"},
        BadConfig{"Strategy", "flags:\n  migStrategy: all\n",
                  "flags.migStrategy: \"all\": must be none, single or mixed"},
        BadConfig{"ZeroReplicas",
                  "sharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
                  "      replicas: 0\n",
                  "sharing.timeSlicing.resources[0].replicas: must be >= 1"},
        BadConfig{"NotResource",
                  "sharing:\n  timeSlicing:\n    resources:\n    - name: GPU\n      replicas: 2\n",
                  "resources[0].name: \"nvidia.com/GPU\" is not an extended resource name"},
        BadConfig{"RenameIsAName",
                  "sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: 2\n"
                  "      rename: true\n",
                  "resources[0].rename: is the resource name"},
        BadConfig{"DevicesWord",
                  "sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: 2\n"
                  "      devices: some\n",
                  "resources[0].devices: \"some\": must be all, a count or a list"},
        BadConfig{"DevicesZero",
                  "sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: 2\n"
                  "      devices: 0\n",
                  "resources[0].devices: a count of devices must be > 0"},
        BadConfig{"DeviceRef",
                  "sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: 2\n"
                  "      devices: [\"first\"]\n",
                  "resources[0].devices[0]: \"first\": must be a GPU index"},
        BadConfig{"MpsWithTimeSlicing",
                  "sharing:\n  mps:\n    resources:\n    - name: gpu\n      replicas: 2\n"
                  "  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: 4\n",
                  "sharing.mps: cannot be combined with sharing.timeSlicing"},
        BadConfig{"MpsReplicas",
                  "sharing:\n  mps:\n    resources:\n    - name: gpu\n      replicas: 49\n",
                  "sharing.mps.resources[0].replicas: must be <= 48"},
        BadConfig{"MpsRule", "sharing:\n  mps:\n    resources:\n    - name: gpu\n",
                  "sharing.mps.resources[0].replicas: required"},
        BadConfig{"MpsRoot", "flags:\n  mpsRoot: run/nvidia/mps\n",
                  "flags.mpsRoot: must be an absolute path"},
        BadConfig{"ImexChannel", "imex:\n  channelIDs: [1]\n",
                  "imex.channelIDs: must be [] or [0]"},
        BadConfig{"IdStrategy", "flags:\n  plugin:\n    deviceIDStrategy: serial\n",
                  "flags.plugin.deviceIDStrategy: \"serial\": must be uuid or index"},
        BadConfig{"ListStrategy", "flags:\n  plugin:\n    deviceListStrategy: [envvar, mounts]\n",
                  "flags.plugin.deviceListStrategy: \"mounts\": must be envvar, volume-mounts"},
        BadConfig{"PluginTypo", "flags:\n  plugin:\n    passDeviceSpec: true\n",
                  "flags.plugin.passDeviceSpec: unknown field"},
        BadConfig{"GfdTypo", "flags:\n  gfd:\n    noTimeStamp: true\n",
                  "flags.gfd.noTimeStamp: unknown field"},
        BadConfig{"SleepInterval", "flags:\n  gfd:\n    sleepInterval: soon\n",
                  "flags.gfd.sleepInterval: \"soon\": must be a duration"},
        BadConfig{"AnnotationPrefix", "flags:\n  plugin:\n    cdiAnnotationPrefix: cdi.k8s.io\n",
                  "cdiAnnotationPrefix: \"cdi.k8s.io\": must be a DNS subdomain followed by '/'"},
        BadConfig{"DriverRoot", "flags:\n  nvidiaDriverRoot: run/nvidia/driver\n",
                  "flags.nvidiaDriverRoot: must be an absolute path"},
        BadConfig{"PatternName", "resources:\n  gpus:\n  - pattern: \"*\"\n",
                  "resources.gpus[0].name: required"},
        BadConfig{"Overlap",
                  "sharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
                  "      replicas: 2\n      devices: [\"0\"]\n    - name: nvidia.com/gpu\n"
                  "      replicas: 4\n      devices: [\"0\"]\n",
                  "resources[1].devices[0]: \"0\" is already shared by another rule"},
        BadConfig{"TwoWholeRules",
                  "sharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
                  "      replicas: 2\n    - name: nvidia.com/gpu\n      replicas: 4\n",
                  "resources[1].devices: a second rule for every device"},
        BadConfig{"NotBool", "sharing:\n  timeSlicing:\n    renameByDefault: maybe\n",
                  "renameByDefault: must be true or false"},
        BadConfig{"BadYaml", "flags: [", "line"}),
    [](const ::testing::TestParamInfo<BadConfig>& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace gpuop::agent
