// The MPS component against the SIMULATED nvidia-cuda-mps-control (test/fakes/driver), run as a
// real process, and the fake NVML library: daemons per resource, the limits they were given,
// the ready file the device plugin waits for, reloads, failures and shutdown.
#include "agent/mps/manager.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/files.h"
#include "test/fakes/nvml/fake_machine.h"
#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::agent::mps {
namespace {

using ::testing::HasSubstr;

constexpr char kMps2[] =
    "sharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n";

class MpsManagerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(machine_.ok()); }
  void TearDown() override {
    manager_.reset();
    // Whatever a failed test left running.
    for (const char* resource : {"nvidia.com/gpu", "nvidia.com/gpu.shared"}) {
      (void)control_.Send({root_.PipeDir(resource), root_.LogDir(resource)}, "quit");
    }
  }

  void Start(const std::string& config) {
    SetConfig(config);
    manager_ = std::make_unique<Manager>(machine_.nvml(), control_, source_,
                                         ManagerOptions{.root = root_.dir(),
                                                        .health_interval = absl::Milliseconds(200),
                                                        .retry = absl::Milliseconds(200),
                                                        .poll = absl::Milliseconds(50),
                                                        .log = [](const std::string&) {}});
    ASSERT_TRUE(manager_->Start().ok());
  }
  void SetConfig(const std::string& config) {
    ASSERT_TRUE(common::WriteFileAtomically(dir_.path() / "config" / "default", config).ok());
  }
  std::string ControlLog(const std::string& resource) {
    return common::ReadFile(root_.LogDir(resource) / "control.log").value_or("");
  }
  std::string Ready() { return common::ReadFile(root_.ReadyFile()).value_or(""); }
  // What the ready file says when every GPU of the node has `replicas` under `resource`.
  std::string AllGpus(const std::string& resource, int replicas) {
    ReadyResources ready;
    for (const hw::Gpu& gpu : machine_.Discover().gpus) ready[resource][gpu.uuid] = replicas;
    return FormatReady(ready);
  }
  bool WaitFor(const std::function<bool()>& done) {
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (!done()) {
      if (absl::Now() > deadline) return false;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return true;
  }
  hw::ComputeMode Mode(int gpu) {
    return machine_.nvml().GetComputeMode(gpu).value_or(hw::ComputeMode::kProhibited);
  }

  fakes::FakeMachine machine_{"l4-4x-pcie"};
  fakes::TempDir dir_;
  Root root_{dir_.path() / "mps"};
  ProcessControlProgram control_{GPUOP_FAKE_MPS_CONTROL, dir_.path() / "scratch",
                                 absl::Seconds(10)};
  ConfigSource source_{dir_.path() / "config", "default"};
  std::unique_ptr<Manager> manager_;
};

TEST_F(MpsManagerTest, StartsTheDaemonWithNvidiasLimitsAndReportsReady) {
  Start(kMps2);
  ASSERT_TRUE(manager_->last_error().ok()) << manager_->last_error();
  EXPECT_EQ(Ready(), AllGpus("nvidia.com/gpu", 2));
  const hw::Inventory inventory = machine_.Discover();
  const std::string log = ControlLog("nvidia.com/gpu");
  for (const hw::Gpu& gpu : inventory.gpus) {
    EXPECT_THAT(log, HasSubstr(absl::StrCat("set_default_device_pinned_mem_limit ", gpu.index, " ",
                                            gpu.memory_bytes / 2 / (1024 * 1024), "M")));
    EXPECT_EQ(Mode(gpu.index), hw::ComputeMode::kExclusiveProcess);
  }
  EXPECT_THAT(log, HasSubstr("set_default_active_thread_percentage 50"));
  EXPECT_TRUE(std::filesystem::exists(root_.StartedFile("nvidia.com/gpu")));
  // A client of the daemon, as a container would be.
  const ControlDirs dirs{root_.PipeDir("nvidia.com/gpu"), root_.LogDir("nvidia.com/gpu")};
  EXPECT_EQ(control_.Send(dirs, "get_default_active_thread_percentage").value_or(""), "50.0\n");
  EXPECT_FALSE(control_.Send(dirs, "set_default_everything 1").ok()) << "unknown commands fail";
  EXPECT_FALSE(control_.StartDaemon(dirs).ok()) << "one daemon per pipe directory";

  manager_->Stop();
  EXPECT_FALSE(std::filesystem::exists(root_.ReadyFile()));
  auto after = control_.Send(dirs, "get_default_active_thread_percentage");
  ASSERT_FALSE(after.ok());
  EXPECT_THAT(std::string(after.status().message()),
              HasSubstr("Cannot find MPS control daemon process"));
  for (const hw::Gpu& gpu : inventory.gpus) EXPECT_EQ(Mode(gpu.index), hw::ComputeMode::kDefault);
}

TEST_F(MpsManagerTest, AConfigurationChangeRestartsTheDaemonsWithTheNewShares) {
  Start(kMps2);
  ASSERT_EQ(Ready(), AllGpus("nvidia.com/gpu", 2));
  SetConfig(
      "sharing:\n  mps:\n    renameByDefault: true\n    resources:\n"
      "    - name: nvidia.com/gpu\n      replicas: 4\n");
  ASSERT_TRUE(WaitFor([&] { return Ready() == AllGpus("nvidia.com/gpu.shared", 4); })) << Ready();
  EXPECT_THAT(ControlLog("nvidia.com/gpu.shared"),
              HasSubstr("set_default_active_thread_percentage 25"));
  EXPECT_FALSE(std::filesystem::exists(root_.StartedFile("nvidia.com/gpu"))) << "the old one quit";
  SetConfig("version: v1\n");
  ASSERT_TRUE(WaitFor([&] { return manager_->running().empty(); }));
  EXPECT_FALSE(std::filesystem::exists(root_.ReadyFile()));
  EXPECT_EQ(Mode(0), hw::ComputeMode::kDefault);
}

TEST_F(MpsManagerTest, ADaemonThatDiesIsStartedAgain) {
  Start(kMps2);
  const ControlDirs dirs{root_.PipeDir("nvidia.com/gpu"), root_.LogDir("nvidia.com/gpu")};
  ASSERT_TRUE(control_.Send(dirs, "quit").ok());
  ASSERT_TRUE(WaitFor([&] { return !std::filesystem::exists(root_.ReadyFile()); }))
      << "the health check noticed";
  ASSERT_TRUE(WaitFor([&] { return Ready() == AllGpus("nvidia.com/gpu", 2); }));
  EXPECT_TRUE(control_.Send(dirs, "get_default_active_thread_percentage").ok());
}

TEST_F(MpsManagerTest, WithoutMpsSharingNoDaemonRuns) {
  Start("sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: 4\n");
  EXPECT_TRUE(manager_->last_error().ok());
  EXPECT_TRUE(manager_->running().empty());
  EXPECT_FALSE(std::filesystem::exists(root_.ReadyFile()));
  EXPECT_EQ(Mode(0), hw::ComputeMode::kDefault);
}

TEST_F(MpsManagerTest, AnotherMpsRootIsRefusedByName) {
  Start("flags:\n  mpsRoot: /var/lib/mps\n" + std::string(kMps2));
  EXPECT_EQ(manager_->last_error().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(manager_->last_error().message()),
              HasSubstr("flags.mpsRoot: \"/var/lib/mps\""));
  EXPECT_TRUE(manager_->running().empty());
}

TEST(ProcessControlProgramTest, TheCommandIsTheProgramsInputAndTheEnvironmentItsOwn) {
  fakes::TempDir dir;
  // A shell reads its commands from standard input as the control program does.
  ProcessControlProgram shell("/bin/sh", dir.path(), absl::Seconds(10),
                              {"LD_LIBRARY_PATH=/driver/usr/lib64"});
  const ControlDirs dirs{dir.path() / "pipe", dir.path() / "log"};
  auto out = shell.Send(dirs, "echo \"$LD_LIBRARY_PATH $CUDA_MPS_PIPE_DIRECTORY\"");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, absl::StrCat("/driver/usr/lib64 ", dirs.pipe_dir.string(), "\n"));
  auto failed = shell.Send(dirs, "echo refused; exit 3");
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(std::string(failed.status().message()), HasSubstr("exited with code 3: refused"));
}

TEST(FindControlProgramTest, LooksInTheDriversBinaryDirectories) {
  fakes::TempDir root;
  auto missing = FindControlProgram(root.path(), {"usr/bin", "usr/sbin"});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr((root.path() / "usr/sbin/nvidia-cuda-mps-control").string()));
  std::filesystem::create_directories(root.path() / "usr/sbin");
  std::filesystem::copy_file(GPUOP_FAKE_MPS_CONTROL,
                             root.path() / "usr/sbin/nvidia-cuda-mps-control");
  EXPECT_EQ(FindControlProgram(root.path(), {"usr/bin", "usr/sbin"}).value_or(""),
            root.path() / "usr/sbin/nvidia-cuda-mps-control");
}

}  // namespace
}  // namespace gpuop::agent::mps
