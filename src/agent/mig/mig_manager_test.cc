// The MIG manager's changes, one sync at a time: a fake Node, the fake NVML machine and a fake
// clock; every test checks the exact labels the Node ends with.
#include "agent/mig/mig_manager_test_util.h"

namespace gpuop::agent::mig::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Outcome = MigSyncResult::Outcome;

TEST_F(MigManagerTest, NoLabelDoesNothing) {
  const MigSyncResult result = Manager().SyncOnce();
  EXPECT_EQ(result.outcome, Outcome::kIdle);
  EXPECT_TRUE(node_.writes().empty());
}

TEST_F(MigManagerTest, LayoutInPlaceSucceedsWithoutPausing) {
  node_.SetLabel(kConfigLabel, "gpu0-as-is");
  MigManager& manager = Manager();
  MigSyncResult result = manager.SyncOnce();
  EXPECT_EQ(result.outcome, Outcome::kInPlace) << result.status;
  ExpectState(kStateSuccess);
  EXPECT_EQ(Reason(), "MIG layout gpu0-as-is is in place: GPU 0: 7x1g.5gb");
  EXPECT_FALSE(EverPaused());
  EXPECT_EQ(node_.pod_lists(), 0);
  EXPECT_EQ(node_.writes().size(), 1u);  // the state alone
  // The next sync writes nothing at all.
  result = manager.SyncOnce();
  EXPECT_EQ(result.outcome, Outcome::kInPlace);
  EXPECT_EQ(node_.writes().size(), 1u);
  EXPECT_EQ(ReadLayoutFile(layout_path()).generation, 1);
}

TEST_F(MigManagerTest, AppliesLayoutWithClientsPausedThenRestoredExactly) {
  OperatorRemovesPausedPods();
  std::string labels_during_apply;
  node_.OnPodList([&](FakeMigNode&) { labels_during_apply = DeployLabels(); });
  node_.SetLabel(kConfigLabel, "all-1g.5gb");
  const MigSyncResult result = Manager().SyncOnce();
  ASSERT_EQ(result.outcome, Outcome::kApplied) << result.status;

  EXPECT_EQ(labels_during_apply, absl::StrCat(kPausedValue, " ", kPausedValue, " ", kPausedValue));
  ExpectRestored();
  ExpectState(kStateSuccess);
  EXPECT_THAT(Reason(), HasSubstr("MIG layout all-1g.5gb applied: GPU 0: 7x1g.5gb; GPU 1: "));
  for (const hw::Gpu& gpu : machine_.Discover().gpus) {
    EXPECT_EQ(CurrentLayout(gpu), (GpuLayout{.mig_enabled = true, .mig_devices = {{"1g.5gb", 7}}}))
        << gpu.index;
  }
  const LayoutNotice notice = ReadLayoutFile(layout_path());
  EXPECT_EQ(notice.generation, 1);
  EXPECT_EQ(notice.layout, "all-1g.5gb");

  // The exact writes: pending, pause (with the record), restore, success.
  const std::vector<FakeMigNode::Write> writes = node_.writes();
  ASSERT_EQ(writes.size(), 4u);
  EXPECT_EQ(writes[0].labels.at(kStateLabel), kStatePending);
  EXPECT_EQ(writes[1].labels.size(), 3u);
  EXPECT_EQ(writes[1].annotations.at(kPauseRecordAnnotation),
            R"({"gpuop.io/deploy.device-plugin":"true","gpuop.io/deploy.exporter":"false",)"
            R"("gpuop.io/deploy.health":null})");
  EXPECT_EQ(writes[2].labels,
            (MetaChanges{{kDevicePlugin, "true"}, {kExporter, "false"}, {kHealth, std::nullopt}}));
  EXPECT_EQ(writes[3].labels.at(kStateLabel), kStateSuccess);
  const auto events = node_.events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].reason, "MigConfigPending");
  EXPECT_EQ(events[1].reason, "MigConfigApplied");
}

TEST_F(MigManagerTest, PodsThatNeverLeaveTimeOutAndTheClientsAreRestored) {
  node_.SetLabel(kConfigLabel, "all-disabled");
  const MigSyncResult result = SyncAdvancingClock(Manager());
  ASSERT_EQ(result.outcome, Outcome::kFailed);
  EXPECT_EQ(result.status.code(), absl::StatusCode::kDeadlineExceeded);
  ExpectState(kStateFailed);
  EXPECT_THAT(Reason(), HasSubstr("MIG layout all-disabled failed: timed out while waiting for "
                                  "GPU clients to stop (pod stop timeout 5m); still on the node: "
                                  "gpuop/gpuop-device-plugin-x1"));
  ExpectRestored();
  EXPECT_EQ(machine_.Discover().gpus[1].mig_devices.size(), 2u);  // hardware untouched
  EXPECT_EQ(node_.events().back().reason, "MigConfigFailed");
  EXPECT_EQ(node_.events().back().type, kube::EventType::kWarning);
}

TEST_F(MigManagerTest, ChangeDeadlineBoundsEveryStep) {
  node_.SetLabel(kConfigLabel, "all-disabled");
  MigManagerOptions options = Options();
  options.change_deadline = absl::Minutes(3);
  const MigSyncResult result = SyncAdvancingClock(Manager(options));
  ASSERT_EQ(result.outcome, Outcome::kFailed);
  EXPECT_THAT(Reason(), HasSubstr("timed out while waiting for GPU clients to stop (still on the "
                                  "node: gpuop/gpuop-device-plugin-x1, "));
  EXPECT_THAT(Reason(), HasSubstr("(change deadline 3m)"));
  ExpectRestored();
}

TEST_F(MigManagerTest, BusyGpuIsRefusedNamingThePidsBeforeAnyPause) {
  OperatorRemovesPausedPods();
  machine_.Control("process 5 4243 512");
  machine_.Control("process 5 4242 1024");
  machine_.Control("process 6 5000 512");  // GPU 6 does not change
  node_.SetLabel(kConfigLabel, "gpu5-7g");
  MigManager& manager = Manager();
  const MigSyncResult result = manager.SyncOnce();
  ASSERT_EQ(result.outcome, Outcome::kFailed);
  EXPECT_EQ(result.status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Reason(), HasSubstr("processes run on GPUs the layout changes: GPU 5 (NVIDIA "
                                  "A100-SXM4-40GB): PIDs 4242, 4243; stop them"));
  EXPECT_THAT(Reason(), Not(HasSubstr("5000")));
  EXPECT_FALSE(EverPaused());
  ExpectRestored();
  EXPECT_FALSE(machine_.Discover().gpus[5].mig_enabled);

  // Retried with backoff, not at every sync.
  EXPECT_EQ(manager.SyncOnce().outcome, Outcome::kDeferred);
  clock_.Advance(absl::Seconds(31));
  EXPECT_EQ(manager.SyncOnce().outcome, Outcome::kFailed);

  // Forced, it goes ahead, but the driver leaves the mode change pending while the processes
  // hold the GPU, and refuses the reset that would activate it.
  MigManagerOptions options = Options();
  options.force = true;
  EXPECT_EQ(Manager(options).SyncOnce().outcome, Outcome::kFailed);
  EXPECT_THAT(Reason(), HasSubstr("the GPU reset that activates the MIG mode was refused (GPU 5: "
                                  "nvidia-smi -r -i 0000:"));
  EXPECT_THAT(Reason(), HasSubstr("the GPU is in use by another process"));
  ExpectRestored();
  EXPECT_FALSE(machine_.Discover().gpus[5].mig_enabled);
  EXPECT_TRUE(machine_.Discover().gpus[5].mig_pending_change);

  // Once they have exited, the reset goes through and the layout is applied.
  machine_.Control("process-exit 5 4242");
  machine_.Control("process-exit 5 4243");
  clock_.Advance(absl::Minutes(2));
  EXPECT_EQ(Manager(options).SyncOnce().outcome, Outcome::kApplied);
  ExpectState(kStateSuccess);
  ExpectRestored();
  EXPECT_EQ(CurrentLayout(machine_.Discover().gpus[5]),
            (GpuLayout{.mig_enabled = true, .mig_devices = {{"7g.40gb", 1}}}));
}

TEST_F(MigManagerTest, LayoutThatCannotFitFailsWithReasonAndIsNotRetried) {
  OperatorRemovesPausedPods();
  node_.SetLabel(kConfigLabel, "too-big");
  MigManager& manager = Manager();
  const MigSyncResult result = manager.SyncOnce();
  ASSERT_EQ(result.outcome, Outcome::kFailed);
  ExpectState(kStateFailed);
  EXPECT_EQ(Reason(),
            "MIG layout too-big failed: GPU 4 (NVIDIA A100-SXM4-40GB): 2x4g.20gb does "
            "not fit: at most 1 fit");
  ExpectRestored();
  // MIG mode did change on GPU 4: the consumers of the layout file must know.
  EXPECT_EQ(ReadLayoutFile(layout_path()).generation, 1);

  const size_t writes = node_.writes().size();
  clock_.Advance(absl::Hours(1));
  EXPECT_EQ(manager.SyncOnce().outcome, Outcome::kDeferred);
  EXPECT_EQ(node_.writes().size(), writes);
  // A new configuration is tried at once.
  ASSERT_TRUE(common::WriteFileAtomically(config_path(),
                                          absl::StrCat(kTestConfig,
                                                       "  too-big-fixed:\n    - {devices: [4], "
                                                       "mig-enabled: true, mig-devices: "
                                                       "{\"4g.20gb\": 1}}\n"))
                  .ok());
  EXPECT_EQ(manager.SyncOnce().outcome, Outcome::kFailed);
  node_.SetLabel(kConfigLabel, "too-big-fixed");
  EXPECT_EQ(manager.SyncOnce().outcome, Outcome::kApplied);
  ExpectState(kStateSuccess);
}

TEST_F(MigManagerTest, BadConfigurationFailsWithoutPausing) {
  ASSERT_TRUE(
      common::WriteFileAtomically(config_path(), "version: v1\nmig-configs: {a: 1}\n").ok());
  node_.SetLabel(kConfigLabel, "a");
  EXPECT_EQ(Manager().SyncOnce().outcome, Outcome::kFailed);
  ExpectState(kStateFailed);
  EXPECT_THAT(Reason(),
              HasSubstr(absl::StrCat("mig config ", config_path().string(),
                                     ": mig-configs.a: must be a non-empty list of entries")));
  EXPECT_FALSE(EverPaused());

  node_.SetLabel(kConfigLabel, "missing");
  ASSERT_TRUE(common::WriteFileAtomically(config_path(), kTestConfig).ok());
  EXPECT_EQ(Manager().SyncOnce().outcome, Outcome::kFailed);
  EXPECT_THAT(Reason(), HasSubstr("MIG layout \"missing\" is not defined in "));
}

}  // namespace
}  // namespace gpuop::agent::mig::testing
