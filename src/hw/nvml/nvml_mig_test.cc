// NvmlAccelerator on MIG and GPM: the A100 layout discovered and changed, MIG devices without the
// monitor capability, and GPM activity of whole GPUs and of each GPU instance.
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "hw/mig_profile.h"
#include "hw/nvml/nvml_accelerator_test_util.h"

namespace gpuop::hw {
namespace {

using ::testing::HasSubstr;

// GPM on a Hopper GPU: nothing at the first sample (no interval yet), then the activity over
// the interval as ratios and the PCIe traffic in bytes per second; NVLink traffic as bytes.
TEST_F(NvmlAcceleratorTest, GpmActivityNeedsTwoSamplesAndIsReportedAsRatios) {
  Open("h100-8x-nvswitch", /*with_control=*/true);
  Control("set 2 gpu_util 90");
  Control("set 2 sm_active 60");
  Control("set 2 tensor_active 35");
  Control("set 2 dram_active 45");
  Control("set 2 pcie_tx_mibps 1024");
  Control("set 2 pcie_rx_mibps 512");
  Control("set 2 nvlink_raw_tx_kib 1000");
  Control("set 2 nvlink_raw_rx_kib 24");
  auto first = nvml_->TakeSample();
  ASSERT_TRUE(first.ok());
  const GpuSample& g = first->gpus[2];
  EXPECT_FALSE(g.activity.graphics_active.has_value());
  EXPECT_FALSE(g.activity.sm_active.has_value());
  EXPECT_FALSE(g.activity.pcie_tx_bytes_per_second.has_value());
  EXPECT_EQ(g.nvlink_bytes_total, std::optional<uint64_t>(1024 * 1024));

  auto second = nvml_->TakeSample();
  ASSERT_TRUE(second.ok());
  const GpuSample& s = second->gpus[2];
  EXPECT_DOUBLE_EQ(s.activity.graphics_active.value_or(-1), 0.9);
  EXPECT_DOUBLE_EQ(s.activity.sm_active.value_or(-1), 0.6);
  EXPECT_DOUBLE_EQ(s.activity.tensor_active.value_or(-1), 0.35);
  EXPECT_DOUBLE_EQ(s.activity.dram_active.value_or(-1), 0.45);
  EXPECT_DOUBLE_EQ(s.activity.pcie_tx_bytes_per_second.value_or(-1), 1024.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(s.activity.pcie_rx_bytes_per_second.value_or(-1), 512.0 * 1024 * 1024);
  // An idle GPU reads 0: present, because it has the counters.
  EXPECT_EQ(second->gpus[0].activity.sm_active, std::optional<double>(0.0));
}

// A Hopper GPU in MIG mode: each GPU instance's own activity (nvmlGpmMigSampleGet), from its
// second sample on; an instance destroyed meanwhile is no longer sampled.
TEST_F(NvmlAcceleratorTest, GpmActivityOfEachMigInstance) {
  Open("h100-8x-nvswitch", /*with_control=*/true);
  Control("set 2 sm_active 60");
  Control("set 2 pcie_tx_mibps 1024");
  absl::StatusOr<bool> reset = nvml_->SetMigMode(2, true);
  ASSERT_TRUE(reset.ok()) << reset.status();
  absl::StatusOr<MigDevice> a = nvml_->CreateMigDevice(2, "3g.40gb");
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<MigDevice> b = nvml_->CreateMigDevice(2, "4g.40gb");
  ASSERT_TRUE(b.ok()) << b.status();

  auto first = nvml_->TakeSample();
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->gpus[2].instance_activity.empty()) << "no interval yet";
  auto second = nvml_->TakeSample();
  ASSERT_TRUE(second.ok());
  const std::map<unsigned int, Activity>& instances = second->gpus[2].instance_activity;
  ASSERT_EQ(instances.size(), 2u);
  const Activity& three = instances.at(a->gpu_instance_id);
  EXPECT_DOUBLE_EQ(three.sm_active.value_or(-1), 0.6);
  EXPECT_DOUBLE_EQ(three.pcie_tx_bytes_per_second.value_or(-1), 1024.0 * 1024 * 1024 * 3 / 8);
  EXPECT_DOUBLE_EQ(instances.at(b->gpu_instance_id).pcie_tx_bytes_per_second.value_or(-1),
                   1024.0 * 1024 * 1024 * 4 / 8);
  EXPECT_TRUE(second->gpus[1].instance_activity.empty()) << "MIG is off on GPU 1";

  ASSERT_TRUE(nvml_->DestroyMigDevice(2, b->gpu_instance_id).ok());
  auto third = nvml_->TakeSample();
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->gpus[2].instance_activity.size(), 1u);
  EXPECT_TRUE(third->gpus[2].instance_activity.contains(a->gpu_instance_id));
}

// Before Hopper there is no GPM, and a GPU without NVLink has no NVLink traffic: absent, not 0.
TEST_F(NvmlAcceleratorTest, WithoutGpmOrNvlinkTheFieldsAreAbsent) {
  Open("l4-4x-pcie");
  ASSERT_TRUE(nvml_->TakeSample().ok());
  auto sample = nvml_->TakeSample();
  ASSERT_TRUE(sample.ok());
  for (const GpuSample& s : sample->gpus) {
    EXPECT_FALSE(s.activity.graphics_active.has_value()) << s.index;
    EXPECT_FALSE(s.activity.dram_active.has_value()) << s.index;
    EXPECT_FALSE(s.activity.pcie_rx_bytes_per_second.has_value()) << s.index;
    EXPECT_FALSE(s.nvlink_bytes_total.has_value()) << s.index;
  }
}

// Without the MIG monitor capability (a container not given /dev/nvidia-caps/nvidia-cap2) NVML
// refuses the GPU instances: the MIG devices are listed, their profiles are unknown, and the GPU
// says why, so that no consumer names a resource after a profile it could not read.
TEST_F(NvmlAcceleratorTest, MigDevicesWithoutTheMonitorCapabilitySayWhy) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gpuop-nvml-caps-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "dev");
  for (const char* node : {"nvidiactl", "nvidia0", "nvidia1", "nvidia2", "nvidia3", "nvidia4",
                           "nvidia5", "nvidia6", "nvidia7"}) {
    std::ofstream(dir / "dev" / node).flush();
  }
  // The access capabilities of every GPU and compute instance of GPU 0 (the driver's mig-minors:
  // 3 to 137 for the GPU of minor 0), not the monitor capability (2): a container given all of
  // GPU 0's MIG devices, which it then sees without their profiles.
  std::filesystem::create_directories(dir / "dev" / "nvidia-caps");
  for (int minor = 3; minor <= 137; ++minor) {
    std::ofstream(dir / "dev" / "nvidia-caps" / ("nvidia-cap" + std::to_string(minor))).flush();
  }
  std::ifstream preset(std::filesystem::path(GPUOP_FAKE_NVML_LIBRARY).parent_path() /
                       "scenarios/a100-8x-mig.yaml");
  std::ofstream scenario(dir / "a100.yaml");
  scenario << preset.rdbuf() << "\ndevice_nodes: " << (dir / "dev").string() << "\n";
  scenario.close();
  Open((dir / "a100.yaml").c_str());
  const Inventory inv = Discover();
  ASSERT_EQ(inv.gpus.size(), 8u);
  EXPECT_THAT(inv.gpus[0].mig_unreadable, HasSubstr("MIG monitor capability"));
  ASSERT_EQ(inv.gpus[0].mig_devices.size(), 7u);
  EXPECT_EQ(inv.gpus[0].mig_devices[0].profile, "");
  EXPECT_EQ(inv.gpus[0].mig_devices[0].memory_bytes, 4864ull << 20) << "the device's own";
  EXPECT_EQ(inv.gpus[4].mig_unreadable, "") << "MIG off: nothing to read";
  EXPECT_THAT(inv.gpus[1].mig_devices, ::testing::IsEmpty()) << "GPU 1's are not given";
  std::filesystem::remove_all(dir);
}

TEST_F(NvmlAcceleratorTest, A100MigLayoutIsDiscoveredAndReconfigurable) {
  Open("a100-8x-mig");
  Inventory inv = Discover();
  ASSERT_EQ(inv.gpus.size(), 8u);
  const Gpu& gpu0 = inv.gpus[0];
  EXPECT_EQ(gpu0.architecture, "ampere");
  EXPECT_TRUE(gpu0.mig_enabled);
  std::vector<std::string> profiles;
  for (const MigProfile& p : gpu0.mig_profiles) profiles.push_back(p.name);
  EXPECT_THAT(profiles, ::testing::IsSupersetOf({"1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb",
                                                 "3g.20gb", "4g.20gb", "7g.40gb"}));
  ASSERT_EQ(gpu0.mig_devices.size(), 7u);
  std::set<std::string> uuids;
  for (const MigDevice& m : gpu0.mig_devices) {
    EXPECT_EQ(m.profile, "1g.5gb");
    EXPECT_EQ(m.uuid.rfind("MIG-", 0), 0u) << m.uuid;
    EXPECT_EQ(m.placement_size, 1u);
    EXPECT_EQ(m.memory_bytes, 4864ull * 1024 * 1024);
    EXPECT_TRUE(m.has_attributes);
    EXPECT_EQ(m.multiprocessor_count, 14u);
    EXPECT_EQ(m.gpu_instance_slices, 1u);
    EXPECT_EQ(m.compute_instance_slices, 1u);
    EXPECT_EQ(m.copy_engines, 1u);
    uuids.insert(m.uuid);
  }
  // GPU 2's 4g.20gb holds two compute instances of 2 slices; each shares the GI's engines.
  ASSERT_FALSE(inv.gpus[2].mig_devices.empty());
  const MigDevice& split = inv.gpus[2].mig_devices.front();
  EXPECT_EQ(split.profile, "4g.20gb");
  EXPECT_EQ(split.multiprocessor_count, 28u);
  EXPECT_EQ(split.gpu_instance_slices, 4u);
  EXPECT_EQ(split.compute_instance_slices, 2u);
  EXPECT_EQ(split.copy_engines, 4u);
  EXPECT_EQ(split.decoders, 2u);
  EXPECT_EQ(split.jpeg_engines, 0u);
  EXPECT_EQ(uuids.size(), 7u);
  EXPECT_EQ(inv.gpus[1].mig_devices.size(), 2u);
  EXPECT_FALSE(inv.gpus[4].mig_enabled);

  // GPU 3 has MIG on and no instances: carve a 3g.20gb, then remove it.
  auto created = nvml_->CreateMigDevice(3, "3g.20gb");
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->profile, "3g.20gb");
  EXPECT_EQ(created->memory_bytes, 19968ull * 1024 * 1024);
  EXPECT_EQ(Discover().gpus[3].mig_devices.size(), 1u);
  auto unknown = nvml_->CreateMigDevice(3, "9g.99gb");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(unknown.status().message()), HasSubstr("offered: "));
  ASSERT_TRUE(nvml_->DestroyMigDevice(3, created->gpu_instance_id).ok());
  EXPECT_TRUE(Discover().gpus[3].mig_devices.empty());

  // mig-parted's compute-instance profile: a 3g.20gb GPU instance holding one 1-slice compute
  // instance, named as NVIDIA names it.
  auto split_created = nvml_->CreateMigDevice(3, "1c.3g.20gb");
  ASSERT_TRUE(split_created.ok()) << split_created.status();
  EXPECT_EQ(split_created->profile, "3g.20gb");
  EXPECT_EQ(split_created->compute_instance_slices, 1u);
  EXPECT_EQ(MigDeviceProfile(*split_created), "1c.3g.20gb");
  EXPECT_EQ(MigDeviceProfile(Discover().gpus[3].mig_devices.at(0)), "1c.3g.20gb");
  ASSERT_TRUE(nvml_->DestroyMigDevice(3, split_created->gpu_instance_id).ok());
  // A compute profile of that size does not exist in a 3-slice GPU instance.
  EXPECT_EQ(nvml_->CreateMigDevice(3, "5c.3g.20gb").status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Discover().gpus[3].mig_devices.empty()) << "no empty GPU instance is left";

  // A full GPU refuses more: two 4g.20gb do not fit.
  ASSERT_TRUE(nvml_->CreateMigDevice(3, "4g.20gb").ok());
  EXPECT_EQ(nvml_->CreateMigDevice(3, "4g.20gb").status().code(),
            absl::StatusCode::kResourceExhausted);

  // MIG mode toggles on a GPU without instances.
  auto pending = nvml_->SetMigMode(5, true);
  ASSERT_TRUE(pending.ok()) << pending.status();
  EXPECT_TRUE(Discover().gpus[5].mig_enabled);
}

}  // namespace
}  // namespace gpuop::hw
