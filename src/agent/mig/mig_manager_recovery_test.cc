// The MIG manager never leaves a node pending or paused: recovery after a restart, failed
// writes, Stop() in the middle of a change, a hardware call that never returns, the worker.
#include <filesystem>
#include <thread>

#include "absl/synchronization/notification.h"
#include "agent/mig/forwarding_accelerator.h"
#include "agent/mig/mig_manager_test_util.h"

namespace gpuop::agent::mig::testing {
namespace {

using ::testing::HasSubstr;
using Outcome = MigSyncResult::Outcome;

// What an agent that died mid-change leaves behind.
void LeaveStuckPending(FakeMigNode& node, const std::string& layout) {
  node.SetLabel(kConfigLabel, layout);
  node.SetLabel(kStateLabel, kStatePending);
  node.SetLabel(kGpuopStateLabel, kStatePending);
  node.SetLabel(kDevicePlugin, kPausedValue);
  node.SetLabel(kExporter, kPausedValue);
  node.SetLabel(kHealth, kPausedValue);
  node.SetAnnotation(
      kPauseRecordAnnotation,
      EncodePauseRecord({{kDevicePlugin, "true"}, {kExporter, "false"}, {kHealth, std::nullopt}}));
}

TEST_F(MigManagerTest, RecoversAStuckPendingNodeWhoseLayoutIsInPlace) {
  LeaveStuckPending(node_, "gpu0-as-is");
  const MigSyncResult result = Manager().SyncOnce();
  EXPECT_EQ(result.outcome, Outcome::kInPlace) << result.status;
  ExpectRestored();
  ExpectState(kStateSuccess);
  // The earlier agent may have died before notifying the device plugin.
  EXPECT_EQ(ReadLayoutFile(layout_path()).generation, 1);
}

TEST_F(MigManagerTest, RecoversAStuckPendingNodeByFinishingTheChange) {
  OperatorRemovesPausedPods();
  node_.RemovePods("app.kubernetes.io/part-of", "gpuop");  // they left with the pause
  LeaveStuckPending(node_, "all-disabled");
  const MigSyncResult result = Manager().SyncOnce();
  EXPECT_EQ(result.outcome, Outcome::kApplied) << result.status;
  ExpectRestored();  // the recorded values, not "paused" and not the fallback
  ExpectState(kStateSuccess);
  for (const hw::Gpu& gpu : machine_.Discover().gpus) EXPECT_FALSE(gpu.mig_enabled);
}

TEST_F(MigManagerTest, RecoversWhenTheLabelWasRemovedMidChange) {
  LeaveStuckPending(node_, "all-disabled");
  node_.RemoveLabel(kConfigLabel);
  EXPECT_EQ(Manager().SyncOnce().outcome, Outcome::kIdle);
  ExpectRestored();
  ExpectState(kStateFailed);
  EXPECT_THAT(Reason(), HasSubstr("label was removed before the change finished"));
}

TEST_F(MigManagerTest, WritesThatFailAreRepeatedByTheNextSync) {
  OperatorRemovesPausedPods();
  node_.SetLabel(kConfigLabel, "gpu5-7g");
  // Pending and pause succeed; every later write fails (the API server went away).
  int patches = 0;
  node_.OnPatch([&](FakeMigNode& node) {
    if (++patches == 2) {
      node.RemovePods("app.kubernetes.io/part-of", "gpuop");
      node.FailPatches(absl::UnavailableError("API server unreachable"));
    }
  });
  MigManager& manager = Manager();
  EXPECT_EQ(manager.SyncOnce().outcome, Outcome::kApplied);
  ExpectState(kStatePending);
  EXPECT_EQ(DeployLabels(), absl::StrCat(kPausedValue, " ", kPausedValue, " ", kPausedValue));

  node_.FailPatches(absl::OkStatus(), 0);
  EXPECT_EQ(manager.SyncOnce().outcome, Outcome::kInPlace);
  ExpectRestored();
  ExpectState(kStateSuccess);
}

TEST_F(MigManagerTest, StopInterruptsAChangeAndRestoresTheClients) {
  node_.SetLabel(kConfigLabel, "all-disabled");  // pods never leave
  MigManager& manager = Manager();
  manager.Start();
  ASSERT_TRUE(WaitFor([&] { return node_.pod_lists() > 0; }));
  manager.Stop();
  ExpectState(kStateFailed);
  EXPECT_THAT(Reason(), HasSubstr("interrupted by agent shutdown while waiting for GPU clients to "
                                  "stop"));
  ExpectRestored();
  EXPECT_EQ(manager.last_result().outcome, Outcome::kFailed);
}

// CreateMigDevice blocks until released, as a hung driver call would.
class HangingCreate : public ForwardingAccelerator {
 public:
  using ForwardingAccelerator::ForwardingAccelerator;
  absl::StatusOr<hw::MigDevice> CreateMigDevice(int gpu, const std::string& profile) override {
    entered_.Notify();
    released_.WaitForNotification();
    return target_.CreateMigDevice(gpu, profile);
  }
  absl::Notification entered_;
  absl::Notification released_;
};

TEST_F(MigManagerTest, HardwareCallThatNeverReturnsFailsAtTheDeadline) {
  OperatorRemovesPausedPods();
  HangingCreate hanging(machine_.nvml());
  accelerator_ = &hanging;
  node_.SetLabel(kConfigLabel, "gpu5-7g");
  MigManager& manager = Manager();
  MigSyncResult result;
  std::thread sync([&] { result = manager.SyncOnce(); });
  hanging.entered_.WaitForNotification();
  clock_.Advance(absl::Minutes(11));
  sync.join();
  EXPECT_EQ(result.outcome, Outcome::kFailed);
  EXPECT_THAT(Reason(), HasSubstr("timed out while applying the MIG layout: creating a 7g.40gb "
                                  "instance on GPU 5 (NVIDIA A100-SXM4-40GB) has not returned"));
  ExpectRestored();
  ExpectState(kStateFailed);

  // While the call is still stuck, no other change starts and nothing is paused.
  node_.SetLabel(kConfigLabel, "all-disabled");
  result = manager.SyncOnce();
  EXPECT_EQ(result.outcome, Outcome::kFailed);
  EXPECT_THAT(Reason(), HasSubstr("has not returned; the GPU driver may be hung"));
  ExpectRestored();

  hanging.released_.Notify();
  manager.Stop();
}

TEST_F(MigManagerTest, WorkerFollowsTheLabel) {
  OperatorRemovesPausedPods();
  MigManager& manager = Manager();
  manager.Start();
  ASSERT_TRUE(WaitFor([&] { return manager.syncs() >= 1; }));
  node_.SetLabel(kConfigLabel, "gpu5-7g");
  ASSERT_TRUE(WaitFor([&] { return node_.label(kStateLabel) == kStateSuccess; }));
  ExpectRestored();
  EXPECT_EQ(machine_.Discover().gpus[5].mig_devices.size(), 1u);
  manager.Stop();
}

// Records when the MIG manager asks the driver for the new instances' device nodes (NVIDIA:
// nvidia-smi in the driver's root), and answers `result`.
class NodeCreatingDriver : public ForwardingAccelerator {
 public:
  NodeCreatingDriver(hw::Accelerator& target, std::filesystem::path layout_file)
      : ForwardingAccelerator(target), layout_file_(std::move(layout_file)) {}
  absl::Status CreateMigDeviceNodes() override {
    ++calls;
    layout_file_written_before = std::filesystem::exists(layout_file_);
    return result;
  }
  int calls = 0;
  bool layout_file_written_before = false;
  absl::Status result;

 private:
  const std::filesystem::path layout_file_;
};

// As NVIDIA's mig-manager runs nvidia-smi after a change: without the new instances' capability
// nodes a container runtime cannot give their MIG devices to containers. Before the layout file
// tells CDI and the device plugin; nothing when the layout is already in place.
TEST_F(MigManagerTest, NewInstancesGetTheirDeviceNodesBeforeTheirConsumersHear) {
  OperatorRemovesPausedPods();
  NodeCreatingDriver driver(machine_.nvml(), layout_path());
  accelerator_ = &driver;
  node_.SetLabel(kConfigLabel, "gpu5-7g");
  MigManager& manager = Manager();
  MigSyncResult result = manager.SyncOnce();
  ASSERT_EQ(result.outcome, Outcome::kApplied) << result.status;
  EXPECT_EQ(driver.calls, 1);
  EXPECT_FALSE(driver.layout_file_written_before);
  EXPECT_TRUE(std::filesystem::exists(layout_path()));
  result = manager.SyncOnce();
  EXPECT_EQ(result.outcome, Outcome::kInPlace) << result.status;
  EXPECT_EQ(driver.calls, 1) << "nothing changed, nothing to create";
}

TEST_F(MigManagerTest, DeviceNodesThatCannotBeCreatedFailTheChangeSayingWhy) {
  OperatorRemovesPausedPods();
  NodeCreatingDriver driver(machine_.nvml(), layout_path());
  driver.result =
      absl::FailedPreconditionError("nvidia-smi: exited with code 9: NVIDIA-SMI has failed");
  accelerator_ = &driver;
  node_.SetLabel(kConfigLabel, "gpu5-7g");
  const MigSyncResult result = Manager().SyncOnce();
  EXPECT_EQ(result.outcome, Outcome::kFailed);
  EXPECT_THAT(Reason(), HasSubstr("nvidia-smi: exited with code 9"));
  ExpectRestored();
  ExpectState(kStateFailed);
  // The layout did change: its consumers still hear of it.
  EXPECT_TRUE(std::filesystem::exists(layout_path()));
}

}  // namespace
}  // namespace gpuop::agent::mig::testing
