#include "agent/health/tracker.h"

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

TEST_F(HealthTrackerTest, IgnoredXidsLeaveTheGpuHealthy) {
  HealthTracker health({}, clock_);
  EXPECT_FALSE(health.Observe({Xid("GPU-a", 13), Xid("GPU-a", 31), Xid("GPU-a", 109)}));
  EXPECT_FALSE(health.Check("GPU-a").has_value());
}

TEST_F(HealthTrackerTest, CriticalXidRecoversAfterAQuietPeriod) {
  HealthTracker health({.recover_after = absl::Minutes(10)}, clock_);
  EXPECT_TRUE(health.Observe({Xid("GPU-a", 79)}));
  auto bad = health.Check("GPU-a");
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->reason, "XID 79");
  EXPECT_FALSE(health.Check("GPU-b").has_value());
  clock_.Advance(absl::Minutes(6));
  EXPECT_FALSE(health.Observe({Xid("GPU-a", 94)}));  // still unhealthy: no change
  EXPECT_EQ(health.Check("GPU-a")->reason, "XID 94");
  EXPECT_EQ(health.NextRecovery(), clock_.Now() + absl::Minutes(10));
  clock_.Advance(absl::Minutes(10));
  EXPECT_FALSE(health.Check("GPU-a").has_value());
}

TEST_F(HealthTrackerTest, ZeroRecoveryNeverRecovers) {
  HealthTracker health({.recover_after = absl::ZeroDuration()}, clock_);
  health.Observe({{.kind = hw::HardwareEvent::Kind::kDoubleBitEcc, .gpu_uuid = "GPU-a"}});
  clock_.Advance(absl::Hours(1000));
  EXPECT_EQ(health.Check("GPU-a")->reason, "double-bit ECC error");
  EXPECT_EQ(health.NextRecovery(), absl::InfiniteFuture());
}

TEST_F(HealthTrackerTest, MigAttributedXidAffectsOnlyItsInstance) {
  HealthTracker health({}, clock_);
  EXPECT_TRUE(health.Observe({Xid("GPU-a", 94, 3)}));
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
  HealthTracker health({.recover_after = absl::Minutes(1)}, clock_);
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
  HealthTracker health({.recover_after = absl::ZeroDuration()}, clock_);
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
