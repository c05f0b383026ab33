// The health monitor against the fake NVML library (real dlopen): events and slow signals become
// per-device verdicts with reasons, the health file and reports with transitions.
#include "agent/health/monitor.h"

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include "common/files.h"
#include "hw/nvml/nvml_accelerator.h"
#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::agent {
namespace {

using ::testing::HasSubstr;
constexpr absl::Duration kWait = absl::Seconds(20);

class HealthMonitorTest : public ::testing::Test {
 protected:
  void TearDown() override {
    monitor_.reset();
    nvml_.reset();
    unsetenv("GPUOP_FAKE_NVML_SCENARIO");
    unsetenv("GPUOP_FAKE_NVML_CONTROL");
  }

  void Start(const char* scenario) {
    control_ = dir_.path() / "nvml-control";
    std::ofstream(control_).flush();
    setenv("GPUOP_FAKE_NVML_SCENARIO", scenario, 1);
    setenv("GPUOP_FAKE_NVML_CONTROL", control_.c_str(), 1);
    auto nvml = hw::NvmlAccelerator::Open({.library_path = GPUOP_FAKE_NVML_LIBRARY});
    ASSERT_TRUE(nvml.ok()) << nvml.status();
    nvml_ = *std::move(nvml);
    HealthMonitorOptions options;
    std::ofstream(dir_.path() / "boot_id") << "boot-1\n";
    evidence_ = std::make_unique<NodeRecoveryEvidence>(
        NodeRecoveryEvidenceOptions{.boot_id = dir_.path() / "boot_id",
                                    .driver_ready = dir_.path() / ".driver-ctr-ready",
                                    .reset_dir = dir_.path() / "gpu-resets"});
    options.watch.evidence = evidence_.get();
    options.state_file = dir_.path() / "health-state.json";
    options.watch.sample_interval = absl::Milliseconds(50);
    options.watch.event_wait = absl::Milliseconds(50);
    options.health_file = file_;
    monitor_ = std::make_unique<HealthMonitor>(
        std::vector<hw::Accelerator*>{nvml_.get()}, options,
        [this](const HealthReport& report, std::vector<HealthTransition> transitions) {
          absl::MutexLock lock(&mu_);
          ++reports_;
          last_ = report;
          for (auto& t : transitions) transitions_.push_back(std::move(t));
        });
    const absl::Status started = monitor_->Start();
    ASSERT_TRUE(started.ok()) << started;
  }

  void Control(const std::string& line) { std::ofstream(control_, std::ios::app) << line << "\n"; }

  // Waits until `done` holds for the transitions seen so far.
  bool WaitFor(const std::function<bool(const std::vector<HealthTransition>&)>& done) {
    const absl::Time deadline = absl::Now() + kWait;
    while (absl::Now() < deadline) {
      {
        absl::MutexLock lock(&mu_);
        if (done(transitions_)) return true;
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
    return false;
  }

  std::map<std::string, Unhealthy> FileVerdicts() {
    absl::StatusOr<std::string> text = common::ReadFile(file_);
    EXPECT_TRUE(text.ok()) << text.status();
    if (!text.ok()) return {};
    absl::StatusOr<std::map<std::string, Unhealthy>> parsed = ParseHealthFile(*text, absl::Now());
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    return parsed.ok() ? *parsed : std::map<std::string, Unhealthy>{};
  }

  fakes::TempDir dir_;
  std::filesystem::path control_;
  const std::filesystem::path file_ = dir_.path() / "run" / "gpu-health.json";
  std::unique_ptr<hw::NvmlAccelerator> nvml_;
  std::unique_ptr<HealthMonitor> monitor_;
  std::unique_ptr<NodeRecoveryEvidence> evidence_;
  absl::Mutex mu_;
  int reports_ = 0;
  HealthReport last_;
  std::vector<HealthTransition> transitions_;
};

auto Count(bool recovered, const std::string& code = "") {
  return [=](const std::vector<HealthTransition>& ts) {
    return std::count_if(ts.begin(), ts.end(), [&](const HealthTransition& t) {
      return t.recovered == recovered &&
             (code.empty() || (t.device.problem && t.device.problem->code == code));
    });
  };
}

TEST_F(HealthMonitorTest, HealthyMachineWritesAHealthyFileAndReports) {
  Start("h100-8x-nvswitch");
  EXPECT_EQ(monitor_->report().devices.size(), 8u);
  EXPECT_TRUE(monitor_->report().healthy());
  EXPECT_TRUE(FileVerdicts().empty());
  absl::MutexLock lock(&mu_);
  EXPECT_GE(reports_, 1);
  EXPECT_TRUE(transitions_.empty());
}

TEST_F(HealthMonitorTest, AResetXidHoldsAcrossARestartUntilTheDriverReloads) {
  Start("h100-8x-nvswitch");
  Control("xid 3 13");  // an application error: ignored
  Control("xid 5 48");
  ASSERT_TRUE(WaitFor([](const auto& ts) { return Count(false, "XidError")(ts) == 1; }));
  const HealthReport report = monitor_->report();
  ASSERT_EQ(report.unhealthy_count(), 1);
  const std::string uuid = report.devices[5].gpu_uuid;
  EXPECT_EQ(report.devices[5].problem->reason, "XID 48");
  EXPECT_EQ(report.devices[5].problem->action, XidAction::kResetGpu);
  std::map<std::string, Unhealthy> verdicts = FileVerdicts();
  ASSERT_TRUE(verdicts.contains(uuid));
  EXPECT_EQ(verdicts[uuid].reason, "XID 48");
  EXPECT_EQ(verdicts[uuid].action, XidAction::kResetGpu);

  // A restarted monitor reads the state file: the GPU still needs its reset.
  monitor_->Stop();
  monitor_.reset();
  {
    absl::MutexLock lock(&mu_);
    transitions_.clear();
  }
  nvml_.reset();
  Start("h100-8x-nvswitch");
  ASSERT_EQ(monitor_->report().unhealthy_count(), 1);
  EXPECT_EQ(monitor_->report().devices[5].problem->reason, "XID 48");

  // The driver container's ready file appears after the XID: the driver reloaded.
  absl::SleepFor(absl::Milliseconds(20));  // past the file system's timestamp granularity
  std::ofstream(dir_.path() / ".driver-ctr-ready").flush();
  ASSERT_TRUE(WaitFor([](const auto& ts) { return Count(true)(ts) == 1; }));
  EXPECT_TRUE(monitor_->report().healthy());
  EXPECT_TRUE(FileVerdicts().empty());
}

TEST_F(HealthMonitorTest, SlowSignalsAreSampled) {
  Start("h100-8x-nvswitch");
  Control("set 1 temperature_c 90");
  Control("set 2 remapped_rows_failure 1");
  // Retired pages are NOT_SUPPORTED on Hopper (it remaps rows); the tracker's test covers them.
  ASSERT_TRUE(WaitFor([](const auto& ts) { return Count(false)(ts) == 2; }));
  const HealthReport report = monitor_->report();
  EXPECT_EQ(report.devices[1].problem->code, "ThermalSlowdown");
  EXPECT_THAT(report.devices[1].problem->reason, HasSubstr("temperature 90 C"));
  EXPECT_EQ(report.devices[2].problem->code, "RowRemapFailure");
  EXPECT_EQ(NodeCondition(report).reason, "MultipleProblems");

  Control("set 1 temperature_c 40");
  ASSERT_TRUE(WaitFor([](const auto& ts) { return Count(true)(ts) == 1; }));
  EXPECT_EQ(monitor_->report().unhealthy_count(), 1);
}

TEST_F(HealthMonitorTest, LostGpuIsReported) {
  Start("l4-4x-pcie");
  Control("lost 2");
  ASSERT_TRUE(WaitFor([](const auto& ts) { return Count(false, "GpuLost")(ts) == 1; }));
  EXPECT_EQ(NodeCondition(monitor_->report()).reason, "GpuLost");
}

TEST_F(HealthMonitorTest, MigAttributedXidIsolatesOneInstance) {
  Start("a100-8x-mig");
  const HealthReport before = monitor_->report();
  const hw::Gpu* mig_gpu = nullptr;
  hw::Inventory inventory = *nvml_->Discover();
  for (const auto& gpu : inventory.gpus) {
    if (!gpu.mig_devices.empty()) {
      mig_gpu = &gpu;
      break;
    }
  }
  ASSERT_NE(mig_gpu, nullptr) << "the preset has MIG devices";
  const hw::MigDevice& victim = mig_gpu->mig_devices.front();
  Control(absl::StrCat("xid ", mig_gpu->index, " 95 ", victim.gpu_instance_id, " ",
                       victim.compute_instance_id));
  ASSERT_TRUE(WaitFor([](const auto& ts) { return Count(false)(ts) == 1; }));
  absl::MutexLock lock(&mu_);
  const HealthTransition& t = transitions_.front();
  EXPECT_EQ(t.device.gpu_instance_id, victim.gpu_instance_id);
  EXPECT_EQ(t.device.mig_uuid, victim.uuid);
  EXPECT_EQ(before.devices.size() + 1, last_.devices.size());
}

}  // namespace
}  // namespace gpuop::agent
