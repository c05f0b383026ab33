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
#include "hw/nvml/nvml_accelerator_test_util.h"
#include "test/fakes/sysfs/presets.h"

namespace gpuop::hw {
namespace {

using ::testing::HasSubstr;

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

}  // namespace
}  // namespace gpuop::hw
