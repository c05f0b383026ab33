// The NVIDIA backend against the fake libnvidia-ml.so.1 (test/fakes/nvml), loaded with dlopen
// exactly as the real library is.
#include "hw/nvml/nvml_accelerator.h"

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include "hw/mig_profile.h"
#include "test/fakes/sysfs/presets.h"

namespace gpuop::hw {
namespace {

using ::testing::HasSubstr;

class NvmlAcceleratorTest : public ::testing::Test {
 protected:
  void TearDown() override {
    nvml_.reset();
    unsetenv("GPUOP_FAKE_NVML_SCENARIO");
    unsetenv("GPUOP_FAKE_NVML_CONTROL");
    if (!control_.empty()) std::filesystem::remove(control_);
    if (!sysfs_.empty()) std::filesystem::remove_all(sysfs_);
  }

  // Opens the fake machine `scenario` (a preset name).
  void Open(const char* scenario, bool with_control = false,
            std::function<absl::Status(const std::vector<std::string>&)> reset = nullptr) {
    setenv("GPUOP_FAKE_NVML_SCENARIO", scenario, 1);
    if (with_control) {
      control_ = std::filesystem::temp_directory_path() /
                 ("gpuop-nvml-control-" + std::to_string(getpid()));
      std::ofstream(control_, std::ios::trunc).flush();
      setenv("GPUOP_FAKE_NVML_CONTROL", control_.c_str(), 1);
    }
    // The PCI bus of an HGX H100 board (the h100-8x-nvswitch scenario's addresses): the NUMA
    // affinity comes from there, not from NVML.
    sysfs_ =
        std::filesystem::temp_directory_path() / ("gpuop-nvml-sysfs-" + std::to_string(getpid()));
    std::filesystem::remove_all(sysfs_);
    std::filesystem::create_directories(sysfs_);
    fakes::NvidiaHgxNode(sysfs_);
    auto nvml = NvmlAccelerator::Open({.library_path = GPUOP_FAKE_NVML_LIBRARY,
                                       .sysfs_root = sysfs_.string(),
                                       .reset_gpus = std::move(reset)});
    ASSERT_TRUE(nvml.ok()) << nvml.status();
    nvml_ = *std::move(nvml);
  }

  void Control(const std::string& line) { std::ofstream(control_, std::ios::app) << line << "\n"; }

  Inventory Discover() {
    auto inventory = nvml_->Discover();
    EXPECT_TRUE(inventory.ok()) << inventory.status();
    return inventory.ok() ? *inventory : Inventory{};
  }

  // The first batch of events within 10 s; empty when none came (or waiting failed, which fails
  // the test).
  std::vector<HardwareEvent> NextEvents() {
    for (int i = 0; i < 100; ++i) {
      absl::StatusOr<std::vector<HardwareEvent>> got = nvml_->WaitEvents(absl::Milliseconds(100));
      EXPECT_TRUE(got.ok()) << got.status();
      if (!got.ok()) return {};
      if (!got->empty()) return *got;
    }
    return {};
  }

  std::unique_ptr<NvmlAccelerator> nvml_;
  std::filesystem::path control_;
  std::filesystem::path sysfs_;
};

// A reset runs with this process's NVML shut down (the driver refuses a reset while any process,
// this one included, holds the GPU), gets the GPUs' bus ids, and NVML works again afterwards;
// events are registered again.
TEST_F(NvmlAcceleratorTest, ResetReleasesNvmlForTheResetAndTakesItBack) {
  std::vector<std::string> reset_ids;
  int count_during_reset = -1;
  Open("h100-8x-nvswitch", /*with_control=*/true, [&](const std::vector<std::string>& ids) {
    reset_ids = ids;
    void* lib = dlopen(GPUOP_FAKE_NVML_LIBRARY, RTLD_NOW | RTLD_NOLOAD);
    auto count = reinterpret_cast<int (*)(unsigned int*)>(dlsym(lib, "nvmlDeviceGetCount_v2"));
    unsigned int n = 0;
    count_during_reset = count(&n);
    dlclose(lib);
    return absl::OkStatus();
  });
  const Inventory before = Discover();
  ASSERT_TRUE(nvml_->WaitEvents(absl::Milliseconds(1)).ok());  // registers the event set
  ASSERT_TRUE(nvml_->ResetGpus({2, 5}).ok());
  EXPECT_EQ(reset_ids,
            (std::vector<std::string>{before.gpus[2].pci_bus_id, before.gpus[5].pci_bus_id}));
  EXPECT_EQ(count_during_reset, 1) << "NVML_ERROR_UNINITIALIZED while the reset runs";
  EXPECT_EQ(Discover().gpus.size(), 8u);
  ASSERT_TRUE(nvml_->WaitEvents(absl::Milliseconds(1)).ok());  // a new event set
  Control("xid 3 48");
  const std::vector<HardwareEvent> events = NextEvents();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0].gpu_index, 3);
}

TEST_F(NvmlAcceleratorTest, AFailedResetIsReportedAndNvmlStillWorks) {
  Open("h100-8x-nvswitch", false, [](const std::vector<std::string>&) {
    return absl::FailedPreconditionError("nvidia-smi -r: in use");
  });
  EXPECT_THAT(std::string(nvml_->ResetGpus({0}).message()), HasSubstr("nvidia-smi -r: in use"));
  EXPECT_EQ(Discover().gpus.size(), 8u);
}

TEST_F(NvmlAcceleratorTest, WithoutAResetCommandResetIsUnimplemented) {
  Open("h100-8x-nvswitch");
  EXPECT_EQ(nvml_->ResetGpus({0}).code(), absl::StatusCode::kUnimplemented);
}

TEST_F(NvmlAcceleratorTest, MissingLibraryIsNotFound) {
  auto nvml = NvmlAccelerator::Open({.library_path = "/nonexistent/libnvidia-ml.so.1"});
  EXPECT_EQ(nvml.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(nvml.status().message()), HasSubstr("/nonexistent/libnvidia-ml.so.1"));
}

TEST_F(NvmlAcceleratorTest, DriverNotLoadedIsAClearPrecondition) {
  unsetenv("GPUOP_FAKE_NVML_SCENARIO");
  auto nvml = NvmlAccelerator::Open({.library_path = GPUOP_FAKE_NVML_LIBRARY});
  EXPECT_EQ(nvml.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(nvml.status().message()), HasSubstr("nvmlInit_v2"));
}

TEST_F(NvmlAcceleratorTest, H100MachineInventoryAndNvSwitchTopology) {
  Open("h100-8x-nvswitch");
  const Inventory inv = Discover();
  EXPECT_EQ(inv.driver_version, "570.86.15");
  EXPECT_EQ(inv.cuda_driver_version, 12080);
  ASSERT_EQ(inv.gpus.size(), 8u);
  std::set<std::string> uuids, buses;
  for (const Gpu& g : inv.gpus) {
    EXPECT_EQ(g.vendor, Vendor::kNvidia);
    EXPECT_EQ(g.product, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(g.uuid.rfind("GPU-", 0), 0u) << g.uuid;
    EXPECT_EQ(g.compute_major, 9);
    EXPECT_EQ(g.compute_minor, 0);
    EXPECT_EQ(g.architecture, "hopper");
    EXPECT_EQ(g.memory_bytes, 81559ull * 1024 * 1024);
    EXPECT_EQ(g.numa_node, g.index < 4 ? 0 : 1);
    ASSERT_TRUE(g.minor_number.has_value());
    EXPECT_THAT(g.device_nodes,
                ::testing::Contains("/dev/nvidia" + std::to_string(*g.minor_number)));
    EXPECT_TRUE(g.mig_capable);
    EXPECT_FALSE(g.mig_enabled);
    EXPECT_EQ(g.pci_class, 0x030200u);   // the HGX board's sysfs: 3D controllers
    EXPECT_FALSE(g.fabric.has_value());  // no multi-node fabric
    // sysfs form: lowercase, 4-digit domain.
    EXPECT_EQ(g.pci_bus_id.size(), 12u) << g.pci_bus_id;
    EXPECT_EQ(g.pci_bus_id.substr(0, 5), "0000:") << g.pci_bus_id;
    uuids.insert(g.uuid);
    buses.insert(g.pci_bus_id);
    ASSERT_EQ(g.links.size(), 7u);
    for (const Link& l : g.links) {
      EXPECT_EQ(l.kind, LinkKind::kGpuFabric) << g.index << "->" << l.peer_index;
      EXPECT_EQ(l.fabric_links, 18) << g.index << "->" << l.peer_index;
      // Every pair has the same NVLinks; the PCIe path still tells the sockets apart.
      EXPECT_EQ(l.pcie,
                g.index / 4 == l.peer_index / 4 ? LinkKind::kSameNumaNode : LinkKind::kCrossSocket)
          << g.index << "->" << l.peer_index;
    }
  }
  EXPECT_EQ(uuids.size(), 8u);
  EXPECT_EQ(buses.size(), 8u);
}

// A GPU's fabric is reported only once its registration completed with a cluster UUID.
TEST_F(NvmlAcceleratorTest, FabricMembershipOfCompletedRegistrations) {
  const std::filesystem::path scenario =
      std::filesystem::temp_directory_path() / ("gpuop-nvml-nvl-" + std::to_string(getpid()));
  std::ofstream(scenario) << R"(driver: {version: "570.86.15", cuda_version: "12.8"}
models:
  gb200: {name: NVIDIA GB200, pci_device_id: 0x2941, architecture: blackwell,
          compute_capability: "10.0", memory_mib: 189471}
gpus:
  - {model: gb200, pci_bus_id: "0000:f1:00.0",
     fabric: {cluster_uuid: "6D9A5C4E-0A2B-4C1D-9E8F-1A2B3C4D5E6F", clique_id: 32766}}
  - {model: gb200, pci_bus_id: "0000:f2:00.0",
     fabric: {cluster_uuid: "6d9a5c4e-0a2b-4c1d-9e8f-1a2b3c4d5e6f", state: in_progress}}
  - {model: gb200, pci_bus_id: "0000:f3:00.0",
     fabric: {cluster_uuid: "00000000-0000-0000-0000-000000000000"}}
  - {model: gb200, pci_bus_id: "0000:f4:00.0"}
)";
  Open(scenario.c_str());
  const Inventory inv = Discover();
  std::filesystem::remove(scenario);
  ASSERT_EQ(inv.gpus.size(), 4u);
  ASSERT_TRUE(inv.gpus[0].fabric.has_value());
  EXPECT_EQ(*inv.gpus[0].fabric, (GpuFabric{.cluster_uuid = "6d9a5c4e-0a2b-4c1d-9e8f-1a2b3c4d5e6f",
                                            .clique_id = 32766}));
  EXPECT_FALSE(inv.gpus[1].fabric.has_value());     // still registering
  EXPECT_FALSE(inv.gpus[2].fabric.has_value());     // no cluster
  EXPECT_FALSE(inv.gpus[3].fabric.has_value());     // NOT_SUPPORTED
  EXPECT_FALSE(inv.gpus[3].pci_class.has_value());  // not in the HGX board's sysfs
}

TEST_F(NvmlAcceleratorTest, NoNumaNodeWithoutTheSysfsAffinity) {
  // The L4 preset's PCI addresses are not on the HGX bus, and NVML has no NUMA node for x86
  // GPUs: nothing is made up.
  Open("l4-4x-pcie");
  for (const Gpu& g : Discover().gpus) EXPECT_FALSE(g.numa_node.has_value()) << g.index;
}

TEST_F(NvmlAcceleratorTest, L4MachinePcieTopologyAndNoMig) {
  Open("l4-4x-pcie");
  const Inventory inv = Discover();
  ASSERT_EQ(inv.gpus.size(), 4u);
  for (const Gpu& g : inv.gpus) {
    EXPECT_EQ(g.architecture, "ada-lovelace");
    EXPECT_FALSE(g.mig_capable);
    EXPECT_TRUE(g.mig_profiles.empty());
    for (const Link& l : g.links) {
      const bool same_side = (g.index < 2) == (l.peer_index < 2);
      EXPECT_EQ(l.kind, same_side ? LinkKind::kSamePcieSwitch : LinkKind::kCrossSocket)
          << g.index << "->" << l.peer_index;
    }
  }
}

TEST_F(NvmlAcceleratorTest, NoGpusIsAnEmptyInventory) {
  Open("no-gpus");
  const Inventory inv = Discover();
  EXPECT_TRUE(inv.gpus.empty());
  EXPECT_FALSE(inv.driver_version.empty());
  auto sample = nvml_->TakeSample();
  ASSERT_TRUE(sample.ok()) << sample.status();
  EXPECT_TRUE(sample->gpus.empty());
}

TEST_F(NvmlAcceleratorTest, SampleHasTheTelemetryFields) {
  Open("h100-8x-nvswitch");
  auto sample = nvml_->TakeSample();
  ASSERT_TRUE(sample.ok()) << sample.status();
  ASSERT_EQ(sample->gpus.size(), 8u);
  for (const GpuSample& g : sample->gpus) {
    EXPECT_FALSE(g.lost);
    EXPECT_TRUE(g.gpu_utilization_percent.has_value());
    EXPECT_TRUE(g.memory_used_bytes.has_value());
    EXPECT_TRUE(g.memory_free_bytes.has_value());
    EXPECT_TRUE(g.temperature_celsius.has_value());
    EXPECT_TRUE(g.slowdown_temperature_celsius.has_value());
    EXPECT_TRUE(g.power_watts.has_value());
    EXPECT_EQ(g.power_limit_default_watts, 700.0);
    EXPECT_EQ(g.power_limit_min_watts, 200.0);
    EXPECT_EQ(g.power_limit_max_watts, 700.0);
    EXPECT_TRUE(g.energy_joules.has_value());
    EXPECT_TRUE(g.sm_clock_mhz.has_value());
    EXPECT_TRUE(g.ecc_volatile_uncorrected.has_value());
    EXPECT_TRUE(g.remapped_rows_failure.has_value());
    EXPECT_TRUE(g.pcie_replay_count.has_value());
  }
  EXPECT_GT(nvml_->calls(), 8 * 20);
}

TEST_F(NvmlAcceleratorTest, PowerLimitIsSetWithinItsRange) {
  Open("h100-8x-nvswitch");
  ASSERT_TRUE(nvml_->SetPowerLimit(2, 450).ok());
  auto sample = nvml_->TakeSample();
  ASSERT_TRUE(sample.ok());
  EXPECT_EQ(sample->gpus[2].power_limit_watts, 450.0);
  const absl::Status too_high = nvml_->SetPowerLimit(2, 900);
  EXPECT_EQ(too_high.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(too_high.message()),
              HasSubstr("nvmlDeviceSetPowerManagementLimit(GPU 2)"));
  EXPECT_EQ(nvml_->SetPowerLimit(99, 300).code(), absl::StatusCode::kInvalidArgument);
}

// The limit that was set and the one enforced are different numbers (nvml.h); power management
// works from the first, so a cap from elsewhere is never taken for the GPU's own limit.
TEST_F(NvmlAcceleratorTest, ManagementAndEnforcedLimitsAreReadApart) {
  Open("h100-8x-nvswitch", /*with_control=*/true);
  Control("set 1 power_cap_w 500");
  auto sample = nvml_->TakeSample();
  ASSERT_TRUE(sample.ok());
  EXPECT_EQ(sample->gpus[1].power_limit_watts, 700.0);
  EXPECT_EQ(sample->gpus[1].enforced_power_limit_watts, 500.0);
  EXPECT_EQ(sample->gpus[0].enforced_power_limit_watts, 700.0);
}

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

TEST_F(NvmlAcceleratorTest, ComputeModeIsSetAndReadPerGpu) {
  Open("h100-8x-nvswitch");
  EXPECT_EQ(nvml_->GetComputeMode(3).value_or(ComputeMode::kProhibited), ComputeMode::kDefault);
  ASSERT_TRUE(nvml_->SetComputeMode(3, ComputeMode::kExclusiveProcess).ok());
  EXPECT_EQ(nvml_->GetComputeMode(3).value_or(ComputeMode::kDefault),
            ComputeMode::kExclusiveProcess);
  EXPECT_EQ(nvml_->GetComputeMode(2).value_or(ComputeMode::kProhibited), ComputeMode::kDefault);
  ASSERT_TRUE(nvml_->SetComputeMode(3, ComputeMode::kDefault).ok());
  EXPECT_EQ(nvml_->GetComputeMode(3).value_or(ComputeMode::kProhibited), ComputeMode::kDefault);
  EXPECT_EQ(nvml_->SetComputeMode(99, ComputeMode::kDefault).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(NvmlAcceleratorTest, InjectedEventsArriveAndLostGpusAreReported) {
  Open("h100-8x-nvswitch", /*with_control=*/true);
  auto none = nvml_->WaitEvents(absl::Milliseconds(20));
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());

  const std::string uuid3 = Discover().gpus[3].uuid;
  Control("xid 3 79");
  Control("ecc-dbe 5");
  // XID 79 takes GPU 3 off the bus, which the driver also reports as the GPU-unavailable event;
  // a double-bit error also raises XID 48, as the real driver does: four events in all.
  std::vector<HardwareEvent> events;
  for (int i = 0; i < 100 && events.size() < 4; ++i) {
    auto got = nvml_->WaitEvents(absl::Milliseconds(100));
    ASSERT_TRUE(got.ok()) << got.status();
    events.insert(events.end(), got->begin(), got->end());
  }
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].kind, HardwareEvent::Kind::kXid);
  EXPECT_EQ(events[0].gpu_index, 3);
  EXPECT_EQ(events[0].xid, 79u);
  EXPECT_EQ(events[0].gpu_uuid, uuid3) << "attributed by the UUID read at registration";
  EXPECT_EQ(events[1].kind, HardwareEvent::Kind::kGpuLost);
  EXPECT_EQ(events[1].gpu_uuid, uuid3);
  EXPECT_EQ(events[2].kind, HardwareEvent::Kind::kDoubleBitEcc);
  EXPECT_EQ(events[2].gpu_index, 5);
  EXPECT_EQ(events[3].kind, HardwareEvent::Kind::kXid);
  EXPECT_EQ(events[3].gpu_index, 5);
  EXPECT_EQ(events[3].xid, 48u);
  auto sample = nvml_->TakeSample();
  ASSERT_TRUE(sample.ok());
  EXPECT_GE(sample->gpus[5].ecc_volatile_uncorrected.value_or(0), 1u);

  Control("lost 6");
  for (int i = 0; i < 100; ++i) {
    sample = nvml_->TakeSample();
    ASSERT_TRUE(sample.ok()) << sample.status();
    if (sample->gpus[6].lost) break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_TRUE(sample->gpus[6].lost);
  EXPECT_FALSE(sample->gpus[5].lost);
  Control("recover 6");
  for (int i = 0; i < 100; ++i) {
    sample = nvml_->TakeSample();
    ASSERT_TRUE(sample.ok());
    if (!sample->gpus[6].lost) break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_FALSE(sample->gpus[6].lost);
}

TEST_F(NvmlAcceleratorTest, OneGpuWithoutAHandleNeverHidesTheOthers) {
  // NVML answers NO_PERMISSION for a GPU whose device node this process may not open.
  Open("l4-4x-pcie", /*with_control=*/true);
  Control("fail 2 nvmlDeviceGetHandleByIndex_v2 NO_PERMISSION");
  const Inventory inventory = Discover();
  std::vector<int> indexes;
  for (const Gpu& gpu : inventory.gpus) indexes.push_back(gpu.index);
  EXPECT_EQ(indexes, (std::vector<int>{0, 1, 3}));
  ASSERT_EQ(inventory.unavailable.size(), 1u);
  EXPECT_EQ(inventory.unavailable[0].index, 2);
  EXPECT_THAT(inventory.unavailable[0].reason, HasSubstr("nvmlDeviceGetHandleByIndex_v2"));
  // Links name GPUs by the driver's index, not by position.
  for (const Gpu& gpu : inventory.gpus) {
    for (const Link& link : gpu.links) {
      EXPECT_TRUE(link.peer_index == 0 || link.peer_index == 1 || link.peer_index == 3);
      EXPECT_NE(link.peer_index, gpu.index);
    }
  }
  const absl::StatusOr<Sample> sample = nvml_->TakeSample();
  ASSERT_TRUE(sample.ok()) << sample.status();
  std::vector<int> sampled;
  for (const GpuSample& gpu : sample->gpus) sampled.push_back(gpu.index);
  EXPECT_EQ(sampled, (std::vector<int>{0, 1, 3}));
  // Its events are missed; the other GPUs' arrive, named by index and UUID.
  ASSERT_TRUE(nvml_->WaitEvents(absl::Milliseconds(1)).ok());
  Control("xid 3 62");
  const std::vector<HardwareEvent> events = NextEvents();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].gpu_index, 3);
  EXPECT_EQ(events[0].gpu_uuid, inventory.gpus[2].uuid);
}

TEST_F(NvmlAcceleratorTest, AGpuThatRefusesEventsLeavesTheOthersWatched) {
  Open("l4-4x-pcie", /*with_control=*/true);
  Control("fail 1 nvmlDeviceRegisterEvents UNKNOWN");
  // Reported once, so that health can mark it as NVIDIA's device plugin does.
  const absl::StatusOr<std::vector<HardwareEvent>> first = nvml_->WaitEvents(absl::Milliseconds(1));
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->size(), 1u);
  EXPECT_EQ((*first)[0].kind, HardwareEvent::Kind::kUnwatched);
  EXPECT_EQ((*first)[0].gpu_index, 1);
  EXPECT_FALSE((*first)[0].gpu_uuid.empty());
  EXPECT_THAT((*first)[0].reason, HasSubstr("nvmlDeviceRegisterEvents"));
  ASSERT_TRUE(
      nvml_->WaitEvents(absl::Milliseconds(1)).value_or(std::vector<HardwareEvent>{1}).empty());
  Control("xid 0 62");
  const std::vector<HardwareEvent> events = NextEvents();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].gpu_index, 0);
}

TEST_F(NvmlAcceleratorTest, AnEventOfALostGpuIsStillAttributed) {
  // A GPU off the bus answers nothing, its UUID included: the event carries the UUID read when
  // the GPU was registered.
  Open("l4-4x-pcie", /*with_control=*/true);
  const std::string uuid = Discover().gpus[2].uuid;
  ASSERT_TRUE(nvml_->WaitEvents(absl::Milliseconds(1)).ok());
  Control("lost 2");
  const std::vector<HardwareEvent> events = NextEvents();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0].gpu_index, 2);
  EXPECT_EQ(events[0].gpu_uuid, uuid);
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
