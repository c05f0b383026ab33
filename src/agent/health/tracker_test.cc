#include "agent/health/tracker.h"

#include <map>

#include <gtest/gtest.h>

#include "common/fake_clock.h"

namespace gpuop::agent {
namespace {

hw::HardwareEvent Xid(const std::string& uuid, uint64_t xid,
                      std::optional<unsigned int> gi = std::nullopt) {
  return {
      .kind = hw::HardwareEvent::Kind::kXid, .gpu_uuid = uuid, .xid = xid, .gpu_instance_id = gi};
}

class HealthTrackerTest : public ::testing::Test {
 protected:
  common::FakeClock clock_;
};

// What the node shows of recovery actions, as a test sets it.
class FakeEvidence : public RecoveryEvidence {
 public:
  std::string BootId() const override { return boot_id; }
  absl::Time DriverLoadedAt() const override { return driver_loaded; }
  absl::Time GpuResetAt(const std::string& uuid) const override {
    auto it = resets.find(uuid);
    return it == resets.end() ? absl::InfinitePast() : it->second;
  }
  std::string boot_id = "boot-1";
  absl::Time driver_loaded = absl::InfinitePast();
  std::map<std::string, absl::Time> resets;
};

TEST_F(HealthTrackerTest, ApplicationAndInformationalXidsLeaveTheGpuHealthy) {
  HealthTracker health({}, clock_);
  // RestartApp (13, 31, 45, 68, 94) and Ignore (43, 63, 92) in NVIDIA's catalogue.
  EXPECT_FALSE(
      health.Observe({Xid("GPU-a", 13), Xid("GPU-a", 31), Xid("GPU-a", 45), Xid("GPU-a", 68),
                      Xid("GPU-a", 94), Xid("GPU-a", 43), Xid("GPU-a", 63), Xid("GPU-a", 92)}));
  EXPECT_FALSE(health.Check("GPU-a").has_value());
}

TEST_F(HealthTrackerTest, AResetXidHoldsUntilTheDriverReloadsOrTheGpuIsReset) {
  HealthTracker health({}, clock_);
  FakeEvidence evidence;
  evidence.driver_loaded = clock_.Now() - absl::Hours(1);
  health.ObserveRecovery(evidence);
  EXPECT_TRUE(health.Observe({Xid("GPU-a", 48), Xid("GPU-b", 119)}));
  ASSERT_TRUE(health.Check("GPU-a").has_value());
  EXPECT_EQ(health.Check("GPU-a")->reason, "XID 48");
  EXPECT_EQ(health.Check("GPU-a")->action, XidAction::kResetGpu);
  // Time alone, and a driver loaded before the XID, end nothing.
  clock_.Advance(absl::Hours(1000));
  EXPECT_FALSE(health.ObserveRecovery(evidence));
  EXPECT_TRUE(health.Check("GPU-a").has_value());
  // gpuop reset GPU-b: only GPU-b is healthy again.
  evidence.resets["GPU-b"] = clock_.Now();
  EXPECT_TRUE(health.ObserveRecovery(evidence));
  EXPECT_FALSE(health.Check("GPU-b").has_value());
  EXPECT_TRUE(health.Check("GPU-a").has_value());
  // The driver reloaded: every GPU was reset.
  evidence.driver_loaded = clock_.Now();
  EXPECT_TRUE(health.ObserveRecovery(evidence));
  EXPECT_FALSE(health.Check("GPU-a").has_value());
}

TEST_F(HealthTrackerTest, ARebootXidHoldsUntilTheNodeReboots) {
  HealthTracker health({}, clock_);
  FakeEvidence evidence;
  health.ObserveRecovery(evidence);
  EXPECT_TRUE(health.Observe({Xid("GPU-a", 79), Xid("GPU-b", 1)}));
  EXPECT_EQ(health.Check("GPU-a")->action, XidAction::kRebootNode);
  EXPECT_EQ(health.Check("GPU-b")->action, XidAction::kContactSupport);
  clock_.Advance(absl::Minutes(1));
  evidence.driver_loaded = clock_.Now();
  evidence.resets["GPU-a"] = clock_.Now();
  EXPECT_FALSE(health.ObserveRecovery(evidence)) << "a reset is not a reboot";
  EXPECT_TRUE(health.Check("GPU-a").has_value());
  evidence.boot_id = "boot-2";
  EXPECT_TRUE(health.ObserveRecovery(evidence));
  EXPECT_FALSE(health.Check("GPU-a").has_value());
  EXPECT_FALSE(health.Check("GPU-b").has_value());
}

TEST_F(HealthTrackerTest, TheLargerActionStands) {
  HealthTracker health({}, clock_);
  EXPECT_TRUE(health.Observe({Xid("GPU-a", 48)}));
  EXPECT_TRUE(health.Observe({Xid("GPU-a", 79)}));
  EXPECT_EQ(health.Check("GPU-a")->reason, "XID 79");
  EXPECT_FALSE(health.Observe({Xid("GPU-a", 95)})) << "a reset does not lower a reboot";
  EXPECT_EQ(health.Check("GPU-a")->action, XidAction::kRebootNode);
}

TEST_F(HealthTrackerTest, ClassesFollowThePolicy) {
  HealthTracker health(
      {.xid_checks = ResolveXidChecks(
           {.actions = {{48, XidAction::kRestartApp}, {13, XidAction::kRebootNode}}})},
      clock_);
  EXPECT_FALSE(health.Observe({Xid("GPU-a", 48)}));
  EXPECT_TRUE(health.Observe({Xid("GPU-a", 13)}));
  EXPECT_EQ(health.Check("GPU-a")->action, XidAction::kRebootNode);
}

TEST_F(HealthTrackerTest, WaitingConditionsSurviveARestart) {
  FakeEvidence evidence;
  HealthTracker before({}, clock_);
  before.ObserveRecovery(evidence);
  before.Observe({Xid("GPU-a", 48), Xid("GPU-b", 95, 3)});
  const nlohmann::json state = before.SaveState();

  HealthTracker after({}, clock_);
  ASSERT_TRUE(after.LoadState(state).ok());
  ASSERT_TRUE(after.Check("GPU-a").has_value());
  EXPECT_EQ(after.Check("GPU-a")->reason, "XID 48");
  EXPECT_EQ(after.Check("GPU-a")->since, clock_.Now());
  EXPECT_TRUE(after.Check("GPU-b", 3).has_value());
  // Saved in boot-1: a node that booted since has done every action.
  evidence.boot_id = "boot-2";
  EXPECT_TRUE(after.ObserveRecovery(evidence));
  EXPECT_FALSE(after.Check("GPU-a").has_value());
  EXPECT_FALSE(after.Check("GPU-b", 3).has_value());

  nlohmann::json bad = state;
  bad["gpus"]["GPU-a"]["event"]["action"] = "Soon";
  EXPECT_EQ(after.LoadState(bad).message(),
            "health state: gpus.GPU-a.event.action: not ResetGpu, RebootNode or ContactSupport");
  bad = state;
  bad["gpus"]["GPU-b"]["instances"]["3"]["since"] = "yesterday";
  EXPECT_EQ(after.LoadState(bad).message(),
            "health state: gpus.GPU-b.instances.3.since: not an integer");
  EXPECT_FALSE(after.LoadState(nlohmann::json::array()).ok());
  EXPECT_FALSE(after.Check("GPU-a").has_value()) << "nothing of a bad file is taken";
}

TEST_F(HealthTrackerTest, TheDriversRecoveryActionHoldsWhileReported) {
  HealthTracker health({}, clock_);
  hw::Inventory inv;
  inv.gpus.push_back({.vendor = hw::Vendor::kNvidia, .index = 0, .uuid = "GPU-a"});
  EXPECT_TRUE(health.Observe(inv, hw::Sample{.gpus = {{.index = 0, .recovery_action = 2}}}));
  EXPECT_EQ(health.Check("GPU-a")->code, "RecoveryActionRequired");
  EXPECT_EQ(health.Check("GPU-a")->reason, "the driver asks for NODE_REBOOT (2)");
  EXPECT_EQ(health.Check("GPU-a")->action, XidAction::kRebootNode);
  EXPECT_TRUE(health.Observe(inv, hw::Sample{.gpus = {{.index = 0, .recovery_action = 4}}}));
  EXPECT_EQ(health.Check("GPU-a")->action, XidAction::kResetGpu);
  EXPECT_TRUE(health.Observe(inv, hw::Sample{.gpus = {{.index = 0, .recovery_action = 0}}}));
  EXPECT_FALSE(health.Check("GPU-a").has_value());
  hw::Sample remap{.gpus = {{.index = 0, .remapped_rows_pending = true}}};
  EXPECT_TRUE(health.Observe(inv, remap));
  EXPECT_EQ(health.Check("GPU-a")->code, "RowRemapPending");
  EXPECT_EQ(health.Check("GPU-a")->action, XidAction::kResetGpu);
}

TEST_F(HealthTrackerTest, MigAttributedXidAffectsOnlyItsInstance) {
  HealthTracker health({}, clock_);
  EXPECT_FALSE(health.Observe({Xid("GPU-a", 94, 3)})) << "a contained error: restart the app";
  EXPECT_TRUE(health.Observe({Xid("GPU-a", 95, 3)}));
  EXPECT_FALSE(health.Check("GPU-a").has_value());  // the GPU as a whole
  EXPECT_TRUE(health.Check("GPU-a", 3).has_value());
  EXPECT_FALSE(health.Check("GPU-a", 4).has_value());
}

TEST_F(HealthTrackerTest, AnXidOfNoKnownGpuMarksEveryGpuAsNvidiasPluginDoes) {
  HealthTracker health({}, clock_);
  hw::Inventory inv;
  inv.gpus.push_back({.vendor = hw::Vendor::kNvidia, .index = 0, .uuid = "GPU-a"});
  inv.gpus.push_back({.vendor = hw::Vendor::kNvidia, .index = 1, .uuid = "GPU-b"});
  health.Observe(inv, hw::Sample{.gpus = {{.index = 0}, {.index = 1}}});
  // Ignored XIDs stay ignored, and nothing is charged to GPU 0 alone.
  EXPECT_FALSE(health.Observe({Xid("", 13)}));
  EXPECT_FALSE(health.Check("GPU-a").has_value());
  EXPECT_TRUE(health.Observe({Xid("", 62)}));
  ASSERT_TRUE(health.Check("GPU-a").has_value());
  EXPECT_EQ(health.Check("GPU-a")->reason, "XID 62 on an unidentified GPU");
  EXPECT_EQ(health.Check("GPU-b")->reason, "XID 62 on an unidentified GPU");
}

TEST_F(HealthTrackerTest, AGpuWhoseEventsCannotBeWatchedStaysUnhealthy) {
  HealthTracker health({}, clock_);
  EXPECT_TRUE(health.Observe({{.kind = hw::HardwareEvent::Kind::kUnwatched,
                               .gpu_uuid = "GPU-a",
                               .reason = "nvmlDeviceRegisterEvents: Unknown Error"}}));
  clock_.Advance(absl::Hours(10));
  ASSERT_TRUE(health.Check("GPU-a").has_value());
  EXPECT_EQ(health.Check("GPU-a")->code, "EventsUnavailable");
  EXPECT_EQ(health.Check("GPU-a")->reason,
            "its XID events cannot be watched (nvmlDeviceRegisterEvents: Unknown Error)");
}

TEST_F(HealthTrackerTest, LostGpuReturnsWhenItAnswers) {
  HealthTracker health({}, clock_);
  hw::Inventory inv;
  inv.gpus.push_back({.vendor = hw::Vendor::kNvidia, .index = 0, .uuid = "GPU-a"});
  hw::Sample lost{.gpus = {{.index = 0, .lost = true}}};
  EXPECT_TRUE(health.Observe(inv, lost));
  EXPECT_EQ(health.Check("GPU-a")->reason, "GPU lost");
  hw::Sample back{.gpus = {{.index = 0}}};
  EXPECT_TRUE(health.Observe(inv, back));
  EXPECT_FALSE(health.Check("GPU-a").has_value());

  // The driver reports the loss as XID 79, which ends when the GPU answers again; another XID
  // does not.
  EXPECT_TRUE(health.Observe(inv, lost));
  EXPECT_TRUE(health.Observe({Xid("GPU-a", 79)}));
  EXPECT_TRUE(health.Observe(inv, back));
  EXPECT_FALSE(health.Check("GPU-a").has_value());
  EXPECT_TRUE(health.Observe(inv, lost));
  EXPECT_TRUE(health.Observe({Xid("GPU-a", 62)}));
  EXPECT_TRUE(health.Observe(inv, back));
  EXPECT_EQ(health.Check("GPU-a")->reason, "XID 62");

  hw::Sample remap{.gpus = {{.index = 0, .remapped_rows_failure = true}}};
  EXPECT_TRUE(health.Observe(inv, remap));
  EXPECT_EQ(health.Check("GPU-a")->reason, "row remap failure");
  EXPECT_FALSE(health.Observe(inv, remap));
}

TEST_F(HealthTrackerTest, SlowSignalsHoldWhileTheSampleReportsThem) {
  HealthTracker health({}, clock_);
  hw::Inventory inv;
  inv.gpus.push_back({.vendor = hw::Vendor::kNvidia, .index = 0, .uuid = "GPU-a"});
  hw::Sample hot{
      .gpus = {{.index = 0, .temperature_celsius = 92, .slowdown_temperature_celsius = 87}}};
  EXPECT_TRUE(health.Observe(inv, hot));
  EXPECT_EQ(health.Check("GPU-a")->reason,
            "temperature 92 C at or above the slowdown threshold 87 C");
  hw::Sample cool{
      .gpus = {{.index = 0, .temperature_celsius = 60, .slowdown_temperature_celsius = 87}}};
  EXPECT_TRUE(health.Observe(inv, cool));
  EXPECT_FALSE(health.Check("GPU-a").has_value());
  hw::Sample pending{.gpus = {{.index = 0, .retired_pages_pending = true}}};
  EXPECT_TRUE(health.Observe(inv, pending));
  EXPECT_EQ(health.Check("GPU-a")->reason, "retired pages pending a GPU reset");
}

TEST_F(HealthTrackerTest, ExternalConditionsCount) {
  HealthTracker health({}, clock_);
  EXPECT_TRUE(health.SetExternal({{"GPU-x", {.reason = "XID 79"}}}));
  EXPECT_EQ(health.Check("GPU-x")->reason, "XID 79");
  EXPECT_FALSE(health.SetExternal({{"GPU-x", {.reason = "XID 79"}}}));
  EXPECT_TRUE(health.SetExternal({}));
  EXPECT_FALSE(health.Check("GPU-x").has_value());
}

}  // namespace
}  // namespace gpuop::agent
