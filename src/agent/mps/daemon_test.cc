// The MPS daemon's steps, as NVIDIA's mps-control-daemon takes them, with a recording control
// program and the fake NVML library (real dlopen) keeping each GPU's compute mode.
#include "agent/mps/daemon.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "test/fakes/nvml/fake_machine.h"
#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::agent::mps {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class RecordingControl final : public ControlProgram {
 public:
  absl::Status StartDaemon(const ControlDirs& dirs) override {
    started.push_back(dirs);
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> Send(const ControlDirs& dirs, const std::string& command) override {
    sent.push_back(command);
    pipe_dirs.push_back(dirs.pipe_dir);
    if (command == fail_on) return absl::UnavailableError("exited with code 1");
    return std::string("50.0\n");
  }
  std::vector<ControlDirs> started;
  std::vector<std::string> sent;
  std::vector<std::filesystem::path> pipe_dirs;
  std::string fail_on;
};

class MpsDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(machine_.ok());
    const hw::Inventory inventory = machine_.Discover();
    ASSERT_GE(inventory.gpus.size(), 2u);
    for (int i : {0, 1}) {
      const hw::Gpu& gpu = inventory.gpus[static_cast<size_t>(i)];
      gpus_.push_back(
          {.index = gpu.index, .uuid = gpu.uuid, .memory_bytes = gpu.memory_bytes, .replicas = 4});
    }
  }
  hw::ComputeMode Mode(int gpu) {
    absl::StatusOr<hw::ComputeMode> mode = machine_.nvml().GetComputeMode(gpu);
    EXPECT_TRUE(mode.ok()) << mode.status();
    return mode.value_or(hw::ComputeMode::kProhibited);
  }
  std::string Limit(int i) {
    return absl::StrCat("set_default_device_pinned_mem_limit ", gpus_[static_cast<size_t>(i)].index,
                        " ", gpus_[static_cast<size_t>(i)].memory_bytes / 4 / (1024 * 1024), "M");
  }

  fakes::FakeMachine machine_{"h100-8x-nvswitch"};
  fakes::TempDir dir_;
  Root root_{dir_.path() / "mps"};
  RecordingControl control_;
  std::vector<SharedGpu> gpus_;
};

TEST_F(MpsDaemonTest, StartSetsExclusiveProcessStartsTheDaemonAndItsLimits) {
  Daemon daemon("nvidia.com/gpu", gpus_, root_, machine_.nvml(), control_);
  ASSERT_TRUE(daemon.Start().ok());
  EXPECT_EQ(Mode(0), hw::ComputeMode::kExclusiveProcess);
  EXPECT_EQ(Mode(1), hw::ComputeMode::kExclusiveProcess);
  EXPECT_EQ(Mode(2), hw::ComputeMode::kDefault) << "not shared";
  ASSERT_EQ(control_.started.size(), 1u);
  EXPECT_EQ(control_.started[0].pipe_dir, dir_.path() / "mps/nvidia.com/gpu/pipe");
  EXPECT_EQ(control_.started[0].log_dir, dir_.path() / "mps/nvidia.com/gpu/log");
  EXPECT_TRUE(std::filesystem::is_directory(control_.started[0].pipe_dir));
  EXPECT_TRUE(std::filesystem::is_directory(control_.started[0].log_dir));
  // 81559 MiB / 4 replicas each; 100 / 4 of the threads.
  EXPECT_THAT(control_.sent,
              ElementsAre(Limit(0), Limit(1), "set_default_active_thread_percentage 25"));
  EXPECT_GT(gpus_[0].memory_bytes, 0u);
  EXPECT_TRUE(std::filesystem::exists(root_.StartedFile("nvidia.com/gpu")));
}

TEST_F(MpsDaemonTest, StopQuitsRestoresTheComputeModeAndCleansUp) {
  Daemon daemon("nvidia.com/gpu", gpus_, root_, machine_.nvml(), control_);
  ASSERT_TRUE(daemon.Start().ok());
  ASSERT_TRUE(daemon.Stop().ok());
  EXPECT_EQ(control_.sent.back(), "quit");
  EXPECT_EQ(Mode(0), hw::ComputeMode::kDefault);
  EXPECT_EQ(Mode(1), hw::ComputeMode::kDefault);
  EXPECT_FALSE(std::filesystem::exists(root_.StartedFile("nvidia.com/gpu")));
  EXPECT_FALSE(std::filesystem::exists(root_.LogDir("nvidia.com/gpu")));
}

TEST_F(MpsDaemonTest, AFailedCommandNamesTheResourceAndTheStep) {
  control_.fail_on = "set_default_active_thread_percentage 25";
  Daemon daemon("nvidia.com/gpu.shared", gpus_, root_, machine_.nvml(), control_);
  absl::Status started = daemon.Start();
  ASSERT_FALSE(started.ok());
  EXPECT_THAT(std::string(started.message()),
              HasSubstr("MPS daemon of nvidia.com/gpu.shared: "
                        "set_default_active_thread_percentage 25: exited with code 1"));
  EXPECT_FALSE(std::filesystem::exists(root_.StartedFile("nvidia.com/gpu.shared")));
}

TEST_F(MpsDaemonTest, HealthIsTheThreadPercentageAnswering) {
  Daemon daemon("nvidia.com/gpu", gpus_, root_, machine_.nvml(), control_);
  EXPECT_TRUE(daemon.CheckHealthy().ok());
  EXPECT_THAT(control_.sent, ElementsAre("get_default_active_thread_percentage"));
  EXPECT_THAT(control_.pipe_dirs, ElementsAre(root_.PipeDir("nvidia.com/gpu")));
  control_.fail_on = "get_default_active_thread_percentage";
  EXPECT_THAT(std::string(daemon.CheckHealthy().message()), HasSubstr("health check"));
}

TEST_F(MpsDaemonTest, DifferentReplicasGetTheSmallestThreadShare) {
  gpus_[1].replicas = 8;
  gpus_[0].memory_bytes = 0;  // an unknown size gets no limit
  Daemon daemon("nvidia.com/gpu", gpus_, root_, machine_.nvml(), control_);
  EXPECT_EQ(daemon.ActiveThreadPercentage(), 12);
  EXPECT_THAT(daemon.PinnedMemoryLimits(),
              ElementsAre(absl::StrCat(gpus_[1].index, " ",
                                       gpus_[1].memory_bytes / 8 / (1024 * 1024), "M")));
}

}  // namespace
}  // namespace gpuop::agent::mps
