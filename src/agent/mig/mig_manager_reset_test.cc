// A MIG mode change the driver leaves pending is completed by a GPU reset once every client is
// stopped; a refused reset fails the change, or with with_reboot asks for a reboot and finishes
// after it (mig-parted's `rebooting`).
#include <map>
#include <vector>

#include "agent/mig/forwarding_accelerator.h"
#include "agent/mig/mig_manager_test_util.h"

namespace gpuop::agent::mig {
namespace {

using ::testing::HasSubstr;
using Outcome = MigSyncResult::Outcome;
using testing::MigManagerTest;

constexpr char kRebootAnnotation[] = "gpuop.io/reboot-requested";

// The driver's side of a mode change, over the fake machine: while another client holds the
// GPUs, nvmlDeviceSetMigMode only records the new mode as pending (current != pending) and a
// reset activates it; a reset is refused while `refuse` says a client still holds the GPU. A
// reboot activates whatever is pending. (The fake NVML models the same rules for a single
// process; this double adds the node's other clients.)
class PendingModeDriver : public ForwardingAccelerator {
 public:
  using ForwardingAccelerator::ForwardingAccelerator;

  absl::StatusOr<bool> SetMigMode(int gpu, bool enabled) override {
    pending_[gpu] = enabled;
    return true;
  }
  absl::StatusOr<hw::Inventory> Discover() override {
    absl::StatusOr<hw::Inventory> inventory = target_.Discover();
    if (!inventory.ok()) return inventory;
    for (hw::Gpu& gpu : inventory->gpus) {
      if (const auto it = pending_.find(gpu.index); it != pending_.end()) {
        gpu.mig_pending_change = it->second != gpu.mig_enabled;
      }
    }
    return inventory;
  }
  absl::Status ResetGpus(const std::vector<int>& gpus) override {
    resets_.push_back(gpus);
    if (on_reset_) on_reset_();
    if (refuse_) {
      return absl::FailedPreconditionError(
          "/usr/bin/nvidia-smi -r -i 0000:cb:00.0: exited with code 255: the GPU is in use");
    }
    return Activate();
  }
  // What a reboot does to the pending modes.
  absl::Status Activate() {
    for (const auto& [gpu, enabled] : pending_) {
      absl::StatusOr<bool> set = target_.SetMigMode(gpu, enabled);
      if (!set.ok()) return set.status();
    }
    pending_.clear();
    return absl::OkStatus();
  }

  bool refuse_ = false;
  std::function<void()> on_reset_;
  std::vector<std::vector<int>> resets_;

 private:
  std::map<int, bool> pending_;
};

class MigManagerResetTest : public MigManagerTest {
 protected:
  void SetUp() override {
    MigManagerTest::SetUp();
    accelerator_ = &driver_;
    OperatorRemovesPausedPods();
    node_.SetLabel(kConfigLabel, "gpu5-7g");  // GPU 5 has MIG off
  }

  hw::Gpu Gpu5() { return machine_.Discover().gpus.at(5); }

  PendingModeDriver driver_{machine_.nvml()};
};

TEST_F(MigManagerResetTest, APendingModeIsActivatedByAResetWithEveryClientStopped) {
  std::string labels_at_reset;
  driver_.on_reset_ = [&] { labels_at_reset = DeployLabels(); };
  const MigSyncResult result = Manager().SyncOnce();
  ASSERT_EQ(result.outcome, Outcome::kApplied) << result.status;
  EXPECT_EQ(driver_.resets_, (std::vector<std::vector<int>>{{5}}));
  EXPECT_EQ(labels_at_reset, absl::StrCat(kPausedValue, " ", kPausedValue, " ", kPausedValue));
  EXPECT_EQ(CurrentLayout(Gpu5()),
            (GpuLayout{.mig_enabled = true, .mig_devices = {{"7g.40gb", 1}}}));
  ExpectState(kStateSuccess);
  ExpectRestored();
  EXPECT_FALSE(node_.annotation(kRebootAnnotation).has_value());
}

TEST_F(MigManagerResetTest, ARefusedResetFailsSayingHowTheChangeCompletes) {
  driver_.refuse_ = true;
  const MigSyncResult result = Manager().SyncOnce();
  ASSERT_EQ(result.outcome, Outcome::kFailed);
  ExpectState(kStateFailed);
  EXPECT_THAT(Reason(), HasSubstr("the GPU reset that activates the MIG mode was refused (GPU 5: "
                                  "/usr/bin/nvidia-smi -r -i 0000:cb:00.0: exited with code 255"));
  EXPECT_THAT(Reason(), HasSubstr("or reboot the node"));
  ExpectRestored();
  EXPECT_FALSE(node_.annotation(kRebootAnnotation).has_value());
}

TEST_F(MigManagerResetTest, WithRebootARefusedResetRebootsAndTheChangeFinishesAfterIt) {
  driver_.refuse_ = true;
  MigManagerOptions options = Options();
  options.with_reboot = true;
  MigManager& manager = Manager(options);
  MigSyncResult result = manager.SyncOnce();
  ASSERT_EQ(result.outcome, Outcome::kFailed);
  ExpectState(kStateRebooting);
  EXPECT_THAT(Reason(), HasSubstr("rebooting the node to apply it"));
  ASSERT_TRUE(node_.annotation(kRebootAnnotation).has_value());
  // The clients stay paused through the reboot.
  EXPECT_EQ(DeployLabels(), absl::StrCat(kPausedValue, " ", kPausedValue, " ", kPausedValue));

  // Until the reboot tool has rebooted the node (and removed its request) nothing happens.
  const size_t writes = node_.writes().size();
  result = manager.SyncOnce();
  EXPECT_EQ(result.outcome, Outcome::kDeferred);
  EXPECT_EQ(node_.writes().size(), writes);
  EXPECT_EQ(driver_.resets_.size(), 1u);

  // The reboot activates the pending mode; the next sync creates the instances and restores.
  ASSERT_TRUE(driver_.Activate().ok());
  node_.RemoveAnnotation(kRebootAnnotation);
  result = manager.SyncOnce();
  ASSERT_EQ(result.outcome, Outcome::kApplied) << result.status;
  EXPECT_EQ(CurrentLayout(Gpu5()),
            (GpuLayout{.mig_enabled = true, .mig_devices = {{"7g.40gb", 1}}}));
  ExpectState(kStateSuccess);
  ExpectRestored();
  EXPECT_EQ(driver_.resets_.size(), 1u);
}

// No reboot tool acts on the request: after reboot_timeout the wait ends, the request is
// withdrawn and the clients come back, rather than staying paused for good.
TEST_F(MigManagerResetTest, ARebootThatNeverComesEndsTheWaitAndRestoresTheClients) {
  driver_.refuse_ = true;
  MigManagerOptions options = Options();
  options.with_reboot = true;
  options.reboot_timeout = absl::Minutes(30);
  MigManager& manager = Manager(options);
  ASSERT_EQ(manager.SyncOnce().outcome, Outcome::kFailed);
  ExpectState(kStateRebooting);
  clock_.Advance(absl::Minutes(29));
  EXPECT_EQ(manager.SyncOnce().outcome, Outcome::kDeferred);
  clock_.Advance(absl::Minutes(2));
  const MigSyncResult result = manager.SyncOnce();
  ASSERT_EQ(result.outcome, Outcome::kFailed);
  ExpectState(kStateFailed);
  EXPECT_THAT(Reason(), HasSubstr("did not happen within 30m (does a reboot tool act on it?)"));
  EXPECT_FALSE(node_.annotation(kRebootAnnotation).has_value());
  ExpectRestored();
}

TEST_F(MigManagerResetTest, AModeStillPendingAfterTheRebootFails) {
  driver_.refuse_ = true;
  MigManagerOptions options = Options();
  options.with_reboot = true;
  MigManager& manager = Manager(options);
  ASSERT_EQ(manager.SyncOnce().outcome, Outcome::kFailed);
  ExpectState(kStateRebooting);
  node_.RemoveAnnotation(kRebootAnnotation);  // rebooted, but the mode did not take effect
  const MigSyncResult result = manager.SyncOnce();
  ASSERT_EQ(result.outcome, Outcome::kFailed);
  ExpectState(kStateFailed);
  EXPECT_THAT(Reason(), HasSubstr("the MIG mode change did not take effect after rebooting "
                                  "(GPU 5)"));
  ExpectRestored();
  EXPECT_FALSE(node_.annotation(kRebootAnnotation).has_value());
}

}  // namespace
}  // namespace gpuop::agent::mig
