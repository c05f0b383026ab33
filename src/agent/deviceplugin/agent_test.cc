// The device plugin against the fake kubelet (real gRPC) and the fake NVML library (real
// dlopen): registration, device lists, allocation, topology, MIG strategies, time-slicing,
// health that recovers, configuration reloads and kubelet restarts.
#include "agent/deviceplugin/agent.h"

#include <algorithm>
#include <atomic>
#include <fstream>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent/mig/forwarding_accelerator.h"
#include "agent/mps/root.h"
#include "common/files.h"
#include "hw/nvml/nvml_accelerator.h"
#include "kube/types/object_meta.h"
#include "test/fakes/kubelet/fake_kubelet.h"
#include "test/fakes/sysfs/fake_sysfs.h"
#include "test/fakes/sysfs/presets.h"

namespace gpuop::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;
constexpr absl::Duration kWait = absl::Seconds(20);

class DevicePluginAgentTest : public ::testing::Test {
 protected:
  void TearDown() override {
    agent_.reset();
    kubelet_.reset();
    flaky_.reset();
    nvml_.reset();
    unsetenv("GPUOP_FAKE_NVML_SCENARIO");
    unsetenv("GPUOP_FAKE_NVML_CONTROL");
  }

  // Starts the fake kubelet, a fake NVML machine and the agent with `config` (YAML).
  // The node's recovery evidence, as a test sets it: GPU resets only.
  class Evidence : public RecoveryEvidence {
   public:
    std::string BootId() const override { return "boot"; }
    absl::Time DriverLoadedAt() const override { return absl::InfinitePast(); }
    absl::Time GpuResetAt(const std::string& uuid) const override {
      absl::MutexLock lock(&mu_);
      auto it = resets_.find(uuid);
      return it == resets_.end() ? absl::InfinitePast() : it->second;
    }
    void Reset(const std::string& uuid) {
      absl::MutexLock lock(&mu_);
      resets_[uuid] = absl::Now();
    }

   private:
    mutable absl::Mutex mu_;
    std::map<std::string, absl::Time> resets_;
  };
  Evidence evidence_;

  void Start(const char* scenario, const std::string& config = "", HealthPolicy health = {}) {
    control_ = dir_.path() / "nvml-control";
    std::ofstream(control_).flush();
    setenv("GPUOP_FAKE_NVML_SCENARIO", scenario, 1);
    setenv("GPUOP_FAKE_NVML_CONTROL", control_.c_str(), 1);
    // The PCI bus of an HGX H100 board (the h100-8x-nvswitch scenario's addresses), where the
    // GPUs' NUMA affinity is read, as on a real node.
    const std::filesystem::path sysfs = dir_.path() / "sys";
    std::filesystem::create_directories(sysfs);
    fakes::NvidiaHgxNode(sysfs);
    auto nvml = hw::NvmlAccelerator::Open(
        {.library_path = GPUOP_FAKE_NVML_LIBRARY, .sysfs_root = sysfs.string()});
    ASSERT_TRUE(nvml.ok()) << nvml.status();
    nvml_ = *std::move(nvml);

    plugin_dir_ = dir_.path() / "device-plugins";
    kubelet_ = std::make_unique<fakes::FakeKubelet>(fakes::FakeKubeletOptions{
        .device_plugin_dir = plugin_dir_.string(),
        .pod_resources_socket = (dir_.path() / "pod-resources.sock").string()});
    ASSERT_TRUE(kubelet_->Start().ok());

    config_dir_ = dir_.path() / "config";
    ASSERT_TRUE(common::WriteFileAtomically(config_dir_ / "default", config).ok());
    source_ = std::make_unique<ConfigSource>(config_dir_, "default");
    agent_ = std::make_unique<DevicePluginAgent>(
        std::vector<hw::Accelerator*>{Discovering()}, *source_,
        DevicePluginAgentOptions{.manager = {.plugin_dir = plugin_dir_},
                                 .health = {.policy = health,
                                            .sample_interval = absl::Milliseconds(50),
                                            .event_wait = absl::Milliseconds(50),
                                            .external_file = dir_.path() / "run" / "health.json",
                                            .evidence = &evidence_},
                                 .layout_file = dir_.path() / "run" / "layout",
                                 .poll = absl::Milliseconds(50),
                                 .init_retry = absl::Milliseconds(100),
                                 .cdi_spec = cdi_spec_,
                                 .host_root = host_root_,
                                 .warn = [this](const std::string& w) {
                                   absl::MutexLock lock(&warnings_mu_);
                                   warnings_.push_back(w);
                                 }});
    started_ = agent_->Start();
    if (expect_started_) {
      ASSERT_TRUE(started_.ok()) << started_;
    }
  }

  // What the agent discovers through: the fake, or a FlakyAccelerator around it.
  hw::Accelerator* Discovering() {
    if (!flaky_discovery_) return nvml_.get();
    flaky_ = std::make_unique<FlakyAccelerator>(*nvml_);
    return flaky_.get();
  }

  void Control(const std::string& line) { std::ofstream(control_, std::ios::app) << line << "\n"; }

  // An accelerator whose discovery fails while `failing` is set (NVML not answering yet).
  class FlakyAccelerator final : public mig::ForwardingAccelerator {
   public:
    using ForwardingAccelerator::ForwardingAccelerator;
    absl::StatusOr<hw::Inventory> Discover() override {
      if (failing.load()) return absl::UnavailableError("nvmlInit_v2: driver not loaded");
      return ForwardingAccelerator::Discover();
    }
    std::atomic<bool> failing{true};
  };

  fakes::TempDir dir_;
  // Set before Start(): the agent discovers through a FlakyAccelerator around the fake.
  bool flaky_discovery_ = false;
  std::unique_ptr<FlakyAccelerator> flaky_;
  bool expect_started_ = true;
  absl::Status started_;
  std::filesystem::path control_, plugin_dir_, config_dir_;
  std::filesystem::path cdi_spec_ = dir_.path() / "cdi" / "gpuop-nvidia.json";
  std::filesystem::path host_root_ = "/";
  absl::Mutex warnings_mu_;
  std::vector<std::string> warnings_;
  std::unique_ptr<hw::NvmlAccelerator> nvml_;
  std::unique_ptr<fakes::FakeKubelet> kubelet_;
  std::unique_ptr<ConfigSource> source_;
  std::unique_ptr<DevicePluginAgent> agent_;
};

TEST_F(DevicePluginAgentTest, RegistersAndAdvertisesEveryGpuWithNuma) {
  Start("h100-8x-nvswitch");
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 8, kWait).ok());
  auto resource = kubelet_->Resource("nvidia.com/gpu");
  ASSERT_TRUE(resource.ok());
  EXPECT_TRUE(resource->options.get_preferred_allocation_available());
  EXPECT_EQ(resource->endpoint, "gpuop-nvidia.com-gpu.sock");
  for (const auto& d : resource->devices) {
    EXPECT_EQ(d.id.rfind("GPU-", 0), 0u);
    ASSERT_EQ(d.numa_nodes.size(), 1u);
  }
}

TEST_F(DevicePluginAgentTest, AllocateGivesCdiNamesAndTheEnvironmentFallback) {
  ASSERT_TRUE(common::WriteFileAtomically(cdi_spec_, "{}").ok());
  Start("h100-8x-nvswitch", "flags:\n  deviceListStrategy: both\n");
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 8, kWait).ok());
  auto pod = kubelet_->AllocatePod({.pod_namespace = "ml",
                                    .pod_name = "train",
                                    .container = "main",
                                    .resource = "nvidia.com/gpu",
                                    .count = 2});
  ASSERT_TRUE(pod.ok()) << pod.status();
  ASSERT_THAT(pod->device_ids, SizeIs(2));
  ASSERT_EQ(pod->response.cdi_devices_size(), 2);
  // gpuop's own CDI kind (agent/cdi/kinds.h), never the nvidia.com/gpu of NVIDIA's toolkit.
  EXPECT_EQ(pod->response.cdi_devices(0).name(), "nvidia.gpuop.io/gpu=" + pod->device_ids[0]);
  EXPECT_EQ(pod->response.envs().at("NVIDIA_VISIBLE_DEVICES"),
            pod->device_ids[0] + "," + pod->device_ids[1]);
  auto unknown = kubelet_->Allocate("nvidia.com/gpu", {{"GPU-nope"}});
  EXPECT_FALSE(unknown.ok());
  EXPECT_THAT(std::string(unknown.status().message()), HasSubstr("unknown device"));
  // Without gpuop's spec on the node, `both` hands out the environment variable alone.
  std::filesystem::remove(cdi_spec_);
  auto env_only = kubelet_->Allocate("nvidia.com/gpu", {{pod->device_ids[0]}});
  ASSERT_TRUE(env_only.ok()) << env_only.status();
  ASSERT_EQ(env_only->container_responses_size(), 1);
  EXPECT_EQ(env_only->container_responses(0).cdi_devices_size(), 0);
  EXPECT_EQ(env_only->container_responses(0).envs().at("NVIDIA_VISIBLE_DEVICES"),
            pod->device_ids[0]);
}

TEST_F(DevicePluginAgentTest, AReloadAppliesTheNewSettingsToServedResources) {
  Start("h100-8x-nvswitch");
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 8, kWait).ok());
  auto resource = kubelet_->Resource("nvidia.com/gpu");
  ASSERT_TRUE(resource.ok()) << resource.status();
  const std::string id = resource->devices.front().id;
  auto before = kubelet_->Allocate("nvidia.com/gpu", {{id}});
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(before->container_responses(0).cdi_devices_size(), 1);
  EXPECT_EQ(before->container_responses(0).annotations_size(), 1)
      << "gpuop's default names the devices in the CRI field and in a CDI annotation";
  const int registrations = agent_->manager().registrations();
  ASSERT_TRUE(common::WriteFileAtomically(config_dir_ / "default",
                                          "version: v1\nflags:\n  plugin:\n"
                                          "    deviceListStrategy: volume-mounts\n"
                                          "    deviceIDStrategy: index\n")
                  .ok());
  ASSERT_TRUE(agent_->Replan().ok());
  auto after = kubelet_->Allocate("nvidia.com/gpu", {{id}});
  ASSERT_TRUE(after.ok()) << after.status();
  const auto& r = after->container_responses(0);
  EXPECT_EQ(r.cdi_devices_size(), 0);
  EXPECT_EQ(r.annotations_size(), 0);
  ASSERT_EQ(r.mounts_size(), 1);
  EXPECT_EQ(r.mounts(0).container_path(), "/var/run/nvidia-container-devices/0");
  EXPECT_EQ(agent_->manager().registrations(), registrations) << "the same servers, re-set";
}

TEST_F(DevicePluginAgentTest, FailOnInitErrorFalseKeepsThePluginUntilDiscoveryWorks) {
  flaky_discovery_ = true;
  Start("h100-8x-nvswitch", "version: v1\nflags:\n  failOnInitError: false\n");
  EXPECT_FALSE(agent_->last_error().ok()) << "discovery failed at start";
  EXPECT_TRUE(agent_->manager().resources().empty());
  flaky_->failing = false;
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 8, kWait).ok())
      << "the retry found the GPUs without a restart";
}

TEST_F(DevicePluginAgentTest, FailOnInitErrorTrueStopsTheStart) {
  flaky_discovery_ = true;
  expect_started_ = false;
  Start("h100-8x-nvswitch", "version: v1\n");
  EXPECT_EQ(started_.code(), absl::StatusCode::kUnavailable) << started_;
  EXPECT_THAT(std::string(started_.message()), HasSubstr("driver not loaded"));
}

TEST_F(DevicePluginAgentTest, KeysNotActedOnAreWarnedOnceByName) {
  Start("h100-8x-nvswitch",
        "version: v1\nflags:\n  plugin:\n    nvidiaCTKPath: /usr/bin/nvidia-ctk\n");
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 8, kWait).ok());
  ASSERT_TRUE(agent_->Replan().ok());
  ASSERT_TRUE(agent_->Replan().ok());
  EXPECT_THAT(warnings_, ::testing::Contains(HasSubstr("flags.plugin.nvidiaCTKPath")));
  EXPECT_EQ(std::count_if(
                warnings_.begin(), warnings_.end(),
                [](const std::string& w) { return w.find("nvidiaCTKPath") != std::string::npos; }),
            1);
}

TEST_F(DevicePluginAgentTest, PreferredAllocationKeepsPairsBehindOneSwitch) {
  Start("l4-4x-pcie");
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 4, kWait).ok());
  auto inventory = nvml_->Discover();
  ASSERT_TRUE(inventory.ok());
  const auto& g = inventory->gpus;
  // With GPU 2 required, its partner is the GPU behind the same PCIe switch (3), not one on
  // the other socket.
  auto preferred = kubelet_->GetPreferredAllocation(
      "nvidia.com/gpu", {g[0].uuid, g[1].uuid, g[2].uuid, g[3].uuid}, {g[2].uuid}, 2);
  ASSERT_TRUE(preferred.ok()) << preferred.status();
  ASSERT_EQ(preferred->container_responses(0).deviceids_size(), 2);
  std::set<std::string> chosen(preferred->container_responses(0).deviceids().begin(),
                               preferred->container_responses(0).deviceids().end());
  EXPECT_EQ(chosen, (std::set<std::string>{g[2].uuid, g[3].uuid}));
}

// What the operator renders for a default install (GPUClusterPolicy migStrategy: single).
constexpr char kDefaultInstallConfig[] = "version: v1\nflags:\n  migStrategy: single\n";

// NVIDIA's semantics for migStrategy single on a node without MIG-enabled GPUs: whole GPUs as
// nvidia.com/gpu (the default install must work on every node).
TEST_F(DevicePluginAgentTest, DefaultSingleOnFourL4sAdvertisesWholeGpus) {
  Start("l4-4x-pcie", kDefaultInstallConfig);
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 4, kWait).ok());
  EXPECT_TRUE(agent_->last_error().ok()) << agent_->last_error();
  EXPECT_EQ(agent_->config().mig_strategy, MigStrategy::kSingle);
  auto resource = kubelet_->Resource("nvidia.com/gpu");
  ASSERT_TRUE(resource.ok()) << resource.status();
  for (const auto& d : resource->devices) EXPECT_EQ(d.id.rfind("GPU-", 0), 0u) << d.id;
}

TEST_F(DevicePluginAgentTest, DefaultSingleOnEightH100sAdvertisesWholeGpus) {
  Start("h100-8x-nvswitch", kDefaultInstallConfig);
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 8, kWait).ok());
  EXPECT_TRUE(agent_->last_error().ok()) << agent_->last_error();
  EXPECT_EQ(kubelet_->Resources(), std::vector<std::string>{"nvidia.com/gpu"});
}

// migStrategy none: every GPU is nvidia.com/gpu whatever its MIG mode (a100-8x-mig has MIG on
// GPUs 0-3 and off on 4-7).
TEST_F(DevicePluginAgentTest, NoneAdvertisesEveryGpuWhateverItsMigMode) {
  Start("a100-8x-mig", "flags:\n  migStrategy: none\n");
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 8, kWait).ok());
  EXPECT_EQ(kubelet_->Resources(), std::vector<std::string>{"nvidia.com/gpu"});
  EXPECT_TRUE(agent_->plan().warnings.empty());
}

TEST_F(DevicePluginAgentTest, MigMixedThenAnInvalidSingleLayoutServesNoDevices) {
  Start("a100-8x-mig", "flags:\n  migStrategy: mixed\n");
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/mig-1g.5gb", 8, kWait).ok());
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/mig-3g.20gb", 2, kWait).ok());
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 4, kWait).ok());
  auto pod = kubelet_->AllocatePod({.pod_namespace = "ml",
                                    .pod_name = "small",
                                    .container = "c",
                                    .resource = "nvidia.com/mig-1g.5gb",
                                    .count = 1});
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->response.cdi_devices(0).name().rfind("nvidia.gpuop.io/gpu=MIG-", 0), 0u);

  // single does not fit this node (GPU 3 in MIG mode without MIG devices, several profiles,
  // MIG off on GPUs 4-7; the first of those is reported, as GFD checks them). As GFD labels it
  // (count 0), nvidia.com/gpu stays registered with no devices and the reason is reported; the
  // plugin keeps running so that a fixed layout is picked up.
  ASSERT_TRUE(
      common::WriteFileAtomically(config_dir_ / "default", "flags:\n  migStrategy: single\n").ok());
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 0, kWait).ok());
  EXPECT_TRUE(kubelet_->WaitForDisconnected("nvidia.com/mig-3g.20gb", kWait).ok());
  EXPECT_EQ(kubelet_->Capacity("nvidia.com/gpu"), 0);
  const absl::Status reason = agent_->last_error();
  EXPECT_EQ(reason.code(), absl::StatusCode::kFailedPrecondition) << reason;
  EXPECT_THAT(std::string(reason.message()),
              HasSubstr("MIG strategy single: GPU 3 (GPU-6238df8f-92a4-1a9c-8d23-c7d072d61ae8) has "
                        "MIG enabled but no MIG devices"));
  EXPECT_EQ(agent_->config().mig_strategy, MigStrategy::kSingle);
}

// NVIDIA's plugin exits on a configuration it cannot load; gpuop's keeps running, serves nothing
// and takes the first good configuration that appears.
TEST_F(DevicePluginAgentTest, AFirstBadConfigDoesNotStopThePlugin) {
  Start("h100-8x-nvswitch", "flags:\n  migStrategy: all\n");
  EXPECT_EQ(agent_->last_error().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(agent_->last_error().message()), HasSubstr("flags.migStrategy"));
  EXPECT_TRUE(agent_->manager().resources().empty());
  ASSERT_TRUE(common::WriteFileAtomically(config_dir_ / "default", kDefaultInstallConfig).ok());
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 8, kWait).ok());
  EXPECT_TRUE(agent_->last_error().ok()) << agent_->last_error();
}

TEST_F(DevicePluginAgentTest, ABadEditKeepsTheLastGoodConfig) {
  Start("h100-8x-nvswitch", "flags:\n  migStrategy: mixed\n");
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 8, kWait).ok());
  ASSERT_TRUE(common::WriteFileAtomically(config_dir_ / "default", "flags: [").ok());
  const absl::Status reason = [&] {
    for (int i = 0; i < 500; ++i) {
      if (!agent_->last_error().ok()) return agent_->last_error();
      absl::SleepFor(absl::Milliseconds(20));
    }
    return absl::OkStatus();
  }();
  EXPECT_EQ(reason.code(), absl::StatusCode::kInvalidArgument) << reason;
  EXPECT_EQ(agent_->config().mig_strategy, MigStrategy::kMixed);
  EXPECT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 8, kWait).ok());
}

TEST_F(DevicePluginAgentTest, MigSingleAfterALayoutChangeIsAnnounced) {
  Start("a100-8x-mig", "flags:\n  migStrategy: mixed\n");
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/mig-3g.20gb", 2, kWait).ok());
  // What a MIG manager does: every GPU to 7 x 1g.5gb ...
  auto inventory = nvml_->Discover();
  ASSERT_TRUE(inventory.ok());
  for (const auto& gpu : inventory->gpus) {
    std::set<unsigned int> instances;
    for (const auto& m : gpu.mig_devices) instances.insert(m.gpu_instance_id);
    if (gpu.index == 0) continue;  // already 7 x 1g.5gb
    for (unsigned int gi : instances) {
      ASSERT_TRUE(nvml_->DestroyMigDevice(gpu.index, gi).ok());
    }
    if (!gpu.mig_enabled) {
      ASSERT_TRUE(nvml_->SetMigMode(gpu.index, true).ok());
    }
    for (int i = 0; i < 7; ++i) {
      ASSERT_TRUE(nvml_->CreateMigDevice(gpu.index, "1g.5gb").ok()) << gpu.index << " " << i;
    }
  }
  // ... then switch the strategy and announce the new layout.
  ASSERT_TRUE(
      common::WriteFileAtomically(config_dir_ / "default", "flags:\n  migStrategy: single\n").ok());
  ASSERT_TRUE(common::WriteFileAtomically(dir_.path() / "run" / "layout", "2").ok());
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 56, kWait).ok());
  EXPECT_TRUE(agent_->last_error().ok()) << agent_->last_error();
  EXPECT_EQ(agent_->config().mig_strategy, MigStrategy::kSingle);
  auto pod = kubelet_->AllocatePod({.pod_namespace = "ml",
                                    .pod_name = "p",
                                    .container = "c",
                                    .resource = "nvidia.com/gpu",
                                    .count = 1});
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->device_ids[0].rfind("MIG-", 0), 0u);
}

TEST_F(DevicePluginAgentTest, TimeSlicingReplicasPerGpuAndReload) {
  Start("h100-8x-nvswitch");
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 8, kWait).ok());
  // GPUs 0-1 get 4 replicas, GPU 2 gets 2, the rest stay whole: 8 + 2 + 5 devices.
  ASSERT_TRUE(common::WriteFileAtomically(config_dir_ / "default", R"(
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 4
      devices: ["0", "1"]
    - name: nvidia.com/gpu
      replicas: 2
      devices: ["2"]
)")
                  .ok());
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 15, kWait).ok());
  auto inventory = nvml_->Discover();
  ASSERT_TRUE(inventory.ok());
  const std::string gpu0 = inventory->gpus[0].uuid;
  // Two replicas of the same GPU are one device to the container.
  auto response = kubelet_->Allocate("nvidia.com/gpu", {{gpu0 + "::0", gpu0 + "::1"}});
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->container_responses(0).cdi_devices_size(), 1);
  EXPECT_EQ(response->container_responses(0).cdi_devices(0).name(), "nvidia.gpuop.io/gpu=" + gpu0);
}

// NVIDIA's plugin waits for the MPS daemon's ready file before it serves a resource shared with
// MPS; gpuop's waits for it without blocking its other resources, and takes the resource off
// again when the daemon goes.
TEST_F(DevicePluginAgentTest, AnMpsResourceIsServedWhileItsDaemonReportsItReady) {
  host_root_ = dir_.path() / "host";
  Start("h100-8x-nvswitch",
        "sharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n");
  EXPECT_TRUE(agent_->manager().resources().empty());
  EXPECT_THAT(std::string(agent_->last_error().message()),
              HasSubstr("sharing.mps: nvidia.com/gpu not served until the MPS control daemon"));
  auto inventory = nvml_->Discover();
  ASSERT_TRUE(inventory.ok());
  mps::ReadyResources ready;
  for (const hw::Gpu& gpu : inventory->gpus) ready["nvidia.com/gpu"][gpu.uuid] = 4;
  const mps::Root root(host_root_ / "run/nvidia/mps");
  ASSERT_TRUE(common::WriteFileAtomically(root.ReadyFile(), mps::FormatReady(ready)).ok());
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_TRUE(agent_->manager().resources().empty()) << "a daemon of another configuration";
  for (const hw::Gpu& gpu : inventory->gpus) ready["nvidia.com/gpu"][gpu.uuid] = 2;
  ASSERT_TRUE(common::WriteFileAtomically(root.ReadyFile(), mps::FormatReady(ready)).ok());
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 16, kWait).ok());
  EXPECT_TRUE(agent_->last_error().ok()) << agent_->last_error();

  const std::string gpu0 = inventory->gpus[0].uuid;
  auto response = kubelet_->Allocate("nvidia.com/gpu", {{gpu0 + "::1"}});
  ASSERT_TRUE(response.ok()) << response.status();
  const auto& r = response->container_responses(0);
  EXPECT_EQ(r.envs().at("CUDA_MPS_PIPE_DIRECTORY"), "/mps/nvidia.com/gpu/pipe");
  ASSERT_EQ(r.mounts_size(), 2);
  EXPECT_EQ(r.mounts(0).host_path(), "/run/nvidia/mps/nvidia.com/gpu/pipe");
  EXPECT_EQ(r.mounts(1).host_path(), "/run/nvidia/mps/shm");
  const std::string gpu1 = inventory->gpus[1].uuid;
  auto two = kubelet_->Allocate("nvidia.com/gpu", {{gpu0 + "::0", gpu1 + "::0"}});
  EXPECT_FALSE(two.ok()) << "failRequestsGreaterThanOne is NVIDIA's default under MPS";

  std::filesystem::remove(root.ReadyFile());
  const absl::Time deadline = absl::Now() + kWait;
  while (!agent_->manager().resources().empty() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_TRUE(agent_->manager().resources().empty()) << "the daemon is gone";
}

TEST_F(DevicePluginAgentTest, LostGpuIsUnhealthyAndRecovers) {
  Start("h100-8x-nvswitch");
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 8, kWait).ok());
  const std::string uuid = nvml_->Discover()->gpus[4].uuid;
  Control("lost 4");
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 7, kWait).ok());
  auto resource = kubelet_->Resource("nvidia.com/gpu");
  EXPECT_EQ(resource->capacity, 8);
  EXPECT_EQ(resource->allocatable, 7);
  // The driver's XID 79 arrives first (attributed by the UUID read at registration); the GPU
  // is recovered once a sample has seen it off the bus, as a reset would find it.
  for (int i = 0; i < 400; ++i) {
    const std::optional<Unhealthy> bad = agent_->health().Check(uuid);
    if (bad.has_value() && bad->code == "GpuLost") break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_EQ(agent_->health().Check(uuid).value_or(Unhealthy{}).code, "GpuLost");
  Control("recover 4");
  EXPECT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 8, kWait).ok());
}

TEST_F(DevicePluginAgentTest, AResetXidHoldsUntilTheGpuIsReset) {
  Start("h100-8x-nvswitch");
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 8, kWait).ok());
  Control("xid 2 13");  // an application error: ignored
  Control("xid 3 95");  // an uncontained ECC error: the GPU needs a reset
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 7, kWait).ok());
  auto inventory = nvml_->Discover();
  const std::string uuid = inventory->gpus[3].uuid;
  auto bad = agent_->health().Check(uuid);
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->reason, "XID 95");
  EXPECT_EQ(bad->action, XidAction::kResetGpu);
  EXPECT_FALSE(agent_->health().Check(inventory->gpus[2].uuid).has_value());
  // Samples pass and the GPU stays out; the reset of another GPU changes nothing.
  absl::SleepFor(absl::Milliseconds(300));
  evidence_.Reset(inventory->gpus[2].uuid);
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(kubelet_->Resource("nvidia.com/gpu")->allocatable, 7);
  evidence_.Reset(uuid);
  EXPECT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 8, kWait).ok());
}

TEST_F(DevicePluginAgentTest, HonoursTheHealthMonitorsFileUntilItExpires) {
  Start("h100-8x-nvswitch");
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 8, kWait).ok());
  auto inventory = nvml_->Discover();
  ASSERT_TRUE(inventory.ok());
  // What the health monitor writes when it finds GPU 6 over its slowdown temperature.
  const std::string file = absl::StrCat(R"({"updated": "2026-01-01T00:00:00Z", "expires": ")",
                                        kube::FormatTimestamp(absl::Now() + absl::Seconds(2)),
                                        R"(", "gpus": [{"uuid": ")", inventory->gpus[6].uuid,
                                        R"(", "index": 6, "healthy": false,
      "code": "ThermalSlowdown", "reason": "temperature 93 C", "since": "2026-01-01T00:00:00Z"}]})");
  ASSERT_TRUE(common::WriteFileAtomically(dir_.path() / "run" / "health.json", file).ok());
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 7, kWait).ok());
  auto bad = agent_->health().Check(inventory->gpus[6].uuid);
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->code, "ThermalSlowdown");
  // Nobody refreshes the file: its verdicts lapse at the next sample after it expires.
  EXPECT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 8, kWait).ok());
}

TEST_F(DevicePluginAgentTest, ReregistersAfterAKubeletRestart) {
  Start("h100-8x-nvswitch");
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 8, kWait).ok());
  ASSERT_TRUE(kubelet_->Restart().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("nvidia.com/gpu", 2, kWait).ok());
  EXPECT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 8, kWait).ok());
  EXPECT_TRUE(std::filesystem::exists(plugin_dir_ / "gpuop-nvidia.com-gpu.sock"));
  // Allocation works against the new registration.
  const auto allocated = kubelet_->AllocatePod({.pod_namespace = "a",
                                                .pod_name = "b",
                                                .container = "c",
                                                .resource = "nvidia.com/gpu",
                                                .count = 1});
  EXPECT_TRUE(allocated.ok()) << allocated.status();
}

// The kubelet never reopens a stream it dropped (it does so when another stream of the
// resource ends): the plugin notices and registers again, once.
TEST_F(DevicePluginAgentTest, RegistersAgainWhenTheKubeletDropsItsStream) {
  Start("h100-8x-nvswitch");
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 8, kWait).ok());
  ASSERT_TRUE(kubelet_->DisconnectPlugin("nvidia.com/gpu").ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("nvidia.com/gpu", 2, kWait).ok());
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 8, kWait).ok());
  absl::SleepFor(absl::Milliseconds(500));  // room for a late end to disconnect it again
  const absl::StatusOr<fakes::KubeletResource> gpu = kubelet_->Resource("nvidia.com/gpu");
  ASSERT_TRUE(gpu.ok());
  EXPECT_EQ(gpu->stream_ends, 1);
  EXPECT_EQ(gpu->registrations, 2);
  EXPECT_EQ(gpu->allocatable, 8);
}

// A socket deleted on a live kubelet: the plugin serves anew, which ends the old stream, and
// registers only after the kubelet has seen that end; otherwise the end would disconnect the
// new registration, as the kubelet's device manager does.
TEST_F(DevicePluginAgentTest, ASocketDeletedOnALiveKubeletEndsTheOldStreamBeforeRegistering) {
  Start("h100-8x-nvswitch");
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 8, kWait).ok());
  std::filesystem::remove(plugin_dir_ / "gpuop-nvidia.com-gpu.sock");
  ASSERT_TRUE(kubelet_->WaitForRegistrations("nvidia.com/gpu", 2, kWait).ok());
  ASSERT_TRUE(kubelet_->WaitForHealthyDevices("nvidia.com/gpu", 8, kWait).ok());
  absl::SleepFor(absl::Milliseconds(500));
  const absl::StatusOr<fakes::KubeletResource> gpu = kubelet_->Resource("nvidia.com/gpu");
  ASSERT_TRUE(gpu.ok());
  EXPECT_EQ(gpu->stream_ends, 1) << "only the old stream's end, before the new registration";
  EXPECT_EQ(gpu->registrations, 2);
  EXPECT_TRUE(gpu->connected);
  EXPECT_EQ(gpu->allocatable, 8);
}

}  // namespace
}  // namespace gpuop::agent
