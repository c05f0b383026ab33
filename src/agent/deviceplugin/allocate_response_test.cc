// Allocate answers per device list strategy, as NVIDIA's device plugin builds them
// (internal/plugin/server.go: getAllocateResponse and its updateResponseFor* steps).
#include "agent/deviceplugin/allocate_response.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuop::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

PluginDevice Gpu(int index) {
  const std::string uuid = "GPU-" + std::to_string(index);
  return {.id = uuid,
          .physical_id = uuid,
          .gpu_index = index,
          .gpu_id = uuid,
          .index_name = std::to_string(index),
          .cdi_name = "nvidia.gpuop.io/gpu=" + uuid,
          .device_nodes = {"/dev/nvidia" + std::to_string(index)}};
}

PluginDevice Mig() {
  return {.id = "MIG-a",
          .physical_id = "MIG-a",
          .gpu_index = 1,
          .gpu_id = "GPU-1",
          .index_name = "1:0",
          .mig = true,
          .cdi_name = "nvidia.gpuop.io/gpu=MIG-a",
          .device_nodes = {"/dev/nvidia1"}};
}

AllocateSettings With(std::vector<DeviceListStrategy> list) {
  return {.strategies = {.list = std::move(list)}};
}

v1beta1::ContainerAllocateResponse Answer(const std::vector<PluginDevice>& devices,
                                          const AllocateSettings& settings,
                                          bool spec_present = true) {
  std::vector<const PluginDevice*> pointers;
  for (const auto& d : devices) pointers.push_back(&d);
  return ContainerResponse(pointers, settings, EffectiveStrategies(settings, spec_present), "id1",
                           [](const std::string& path) { return path != "/dev/nvidia-modeset"; });
}

std::vector<std::string> CdiNames(const v1beta1::ContainerAllocateResponse& r) {
  std::vector<std::string> names;
  for (const auto& d : r.cdi_devices()) names.push_back(d.name());
  return names;
}

// NVIDIA's internal/plugin/mps.go: the per-resource pipe directory and the daemons' shared shm,
// from the host's MPS root, whatever the device list strategy.
TEST(AllocateResponseTest, MpsClientsGetThePipeDirectoryAndTheDaemonsShm) {
  auto r = Answer({Gpu(0)}, With({DeviceListStrategy::kCdiCri}));
  AddMpsClient("nvidia.com/gpu.shared", "/var/run/mps", r);
  EXPECT_THAT(CdiNames(r), ElementsAre("nvidia.gpuop.io/gpu=GPU-0"));
  EXPECT_THAT(r.envs(), UnorderedElementsAre(
                            Pair("CUDA_MPS_PIPE_DIRECTORY", "/mps/nvidia.com/gpu.shared/pipe")));
  ASSERT_EQ(r.mounts_size(), 2);
  EXPECT_EQ(r.mounts(0).container_path(), "/mps/nvidia.com/gpu.shared/pipe");
  EXPECT_EQ(r.mounts(0).host_path(), "/var/run/mps/nvidia.com/gpu.shared/pipe");
  EXPECT_FALSE(r.mounts(0).read_only());
  EXPECT_EQ(r.mounts(1).container_path(), "/dev/shm");
  EXPECT_EQ(r.mounts(1).host_path(), "/var/run/mps/shm");
}

TEST(AllocateResponseTest, CdiCriNamesTheDevicesAndNothingElse) {
  const auto r = Answer({Gpu(0), Gpu(1)}, With({DeviceListStrategy::kCdiCri}));
  EXPECT_THAT(CdiNames(r), ElementsAre("nvidia.gpuop.io/gpu=GPU-0", "nvidia.gpuop.io/gpu=GPU-1"));
  EXPECT_THAT(r.envs(), IsEmpty());
  EXPECT_THAT(r.annotations(), IsEmpty());
  EXPECT_EQ(r.devices_size(), 0);
}

TEST(AllocateResponseTest, CdiAnnotationsForRuntimesThatIgnoreTheField) {
  AllocateSettings settings = With({DeviceListStrategy::kCdiAnnotations});
  settings.cdi_annotation_prefix = "cdi.example.com/";
  const auto r = Answer({Gpu(0), Mig()}, settings);
  EXPECT_THAT(CdiNames(r), IsEmpty());
  EXPECT_THAT(r.annotations(),
              UnorderedElementsAre(Pair("cdi.example.com/gpuop-device-plugin_id1",
                                        "nvidia.gpuop.io/gpu=GPU-0,nvidia.gpuop.io/gpu=MIG-a")));
}

TEST(AllocateResponseTest, EnvVarWithIndexIds) {
  AllocateSettings settings = With({DeviceListStrategy::kEnvVar});
  settings.id_strategy = DeviceIdStrategy::kIndex;
  settings.imex_channels = {0};
  const auto r = Answer({Gpu(0), Mig()}, settings);
  EXPECT_THAT(r.envs(), UnorderedElementsAre(Pair("NVIDIA_VISIBLE_DEVICES", "0,1:0"),
                                             Pair("NVIDIA_IMEX_CHANNELS", "0")));
  ASSERT_EQ(r.devices_size(), 1) << "the IMEX channel's device node";
  EXPECT_EQ(r.devices(0).container_path(), "/dev/nvidia-caps-imex-channels/channel0");
}

TEST(AllocateResponseTest, VolumeMountsPointTheRuntimeAtTheDeviceDirectory) {
  const auto r = Answer({Gpu(0), Gpu(1)}, With({DeviceListStrategy::kVolumeMounts}));
  EXPECT_THAT(r.envs(),
              ElementsAre(Pair("NVIDIA_VISIBLE_DEVICES", "/var/run/nvidia-container-devices")));
  ASSERT_EQ(r.mounts_size(), 2);
  EXPECT_EQ(r.mounts(0).host_path(), "/dev/null");
  EXPECT_EQ(r.mounts(0).container_path(), "/var/run/nvidia-container-devices/GPU-0");
  EXPECT_EQ(r.mounts(1).container_path(), "/var/run/nvidia-container-devices/GPU-1");
}

TEST(AllocateResponseTest, PassDeviceSpecsUnderTheDevRootWithTheControlNodesThatExist) {
  AllocateSettings settings = With({DeviceListStrategy::kEnvVar});
  settings.pass_device_specs = true;
  settings.dev_root = "/run/nvidia/driver";
  const auto r = Answer({Gpu(3)}, settings);
  std::vector<std::pair<std::string, std::string>> specs;
  for (const auto& d : r.devices()) specs.emplace_back(d.container_path(), d.host_path());
  EXPECT_THAT(specs,
              ElementsAre(Pair("/dev/nvidia3", "/run/nvidia/driver/dev/nvidia3"),
                          Pair("/dev/nvidiactl", "/run/nvidia/driver/dev/nvidiactl"),
                          Pair("/dev/nvidia-uvm", "/run/nvidia/driver/dev/nvidia-uvm"),
                          Pair("/dev/nvidia-uvm-tools", "/run/nvidia/driver/dev/nvidia-uvm-tools"),
                          Pair("/dev/nvidia-modeset", "/run/nvidia/driver/dev/nvidia-modeset")))
      << "the fake says /dev/nvidia-modeset is missing only without the dev root";
}

TEST(AllocateResponseTest, PassDeviceSpecsIsForNonCdiStrategiesOnly) {
  AllocateSettings settings = With({DeviceListStrategy::kCdiCri});
  settings.pass_device_specs = true;
  settings.gds = true;
  const auto r = Answer({Gpu(0)}, settings);
  EXPECT_EQ(r.devices_size(), 0);
  EXPECT_THAT(r.envs(), ElementsAre(Pair("NVIDIA_GDS", "enabled")));
}

TEST(AllocateResponseTest, BothFallsBackToEnvVarWhileTheSpecIsMissing) {
  AllocateSettings settings = With({DeviceListStrategy::kCdiCri, DeviceListStrategy::kEnvVar});
  settings.strategies.cdi_fallback = true;
  const auto with_spec = Answer({Gpu(0)}, settings, /*spec_present=*/true);
  EXPECT_THAT(CdiNames(with_spec), ElementsAre("nvidia.gpuop.io/gpu=GPU-0"));
  EXPECT_THAT(with_spec.envs(), ElementsAre(Pair("NVIDIA_VISIBLE_DEVICES", "GPU-0")));
  const auto without = Answer({Gpu(0)}, settings, /*spec_present=*/false);
  EXPECT_THAT(CdiNames(without), IsEmpty());
  EXPECT_THAT(without.envs(), ElementsAre(Pair("NVIDIA_VISIBLE_DEVICES", "GPU-0")));
}

TEST(AllocateResponseTest, ADisabledCdiComponentMovesEveryCdiStrategyToEnvVar) {
  AllocateSettings settings = With({DeviceListStrategy::kCdiCri});
  settings.cdi_enabled = false;
  const auto r = Answer({Gpu(0)}, settings);
  EXPECT_THAT(CdiNames(r), IsEmpty());
  EXPECT_THAT(r.envs(), ElementsAre(Pair("NVIDIA_VISIBLE_DEVICES", "GPU-0")));
  AllocateSettings strict = With({DeviceListStrategy::kCdiCri});
  EXPECT_THAT(CdiNames(Answer({Gpu(0)}, strict, /*spec_present=*/false)),
              ElementsAre("nvidia.gpuop.io/gpu=GPU-0"))
      << "cdi-cri alone never falls back: the runtime says which name it cannot resolve";
}

TEST(AllocateResponseTest, AmdDevicesGetTheirNodesWithoutCdi) {
  PluginDevice amd{.id = "0000:19:00.0",
                   .physical_id = "0000:19:00.0",
                   .vendor = hw::Vendor::kAmd,
                   .cdi_name = "amd.com/gpu=0000:19:00.0",
                   .device_nodes = {"/dev/kfd", "/dev/dri/renderD128"}};
  const auto cdi = Answer({amd}, With({DeviceListStrategy::kCdiCri}));
  EXPECT_THAT(CdiNames(cdi), ElementsAre("amd.com/gpu=0000:19:00.0"));
  const auto env = Answer({amd}, With({DeviceListStrategy::kEnvVar}));
  EXPECT_THAT(env.envs(), IsEmpty());
  EXPECT_EQ(env.devices_size(), 2);
}

}  // namespace
}  // namespace gpuop::agent
