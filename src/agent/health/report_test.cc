#include "agent/health/report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/fake_clock.h"

namespace gpuop::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::SizeIs;

hw::Inventory TwoGpus() {
  hw::Inventory inv;
  inv.gpus.push_back({.vendor = hw::Vendor::kNvidia,
                      .index = 0,
                      .uuid = "GPU-00000000-aaaa-bbbb-cccc-000000000000",
                      .pci_bus_id = "0000:17:00.0"});
  hw::Gpu mig{.vendor = hw::Vendor::kNvidia,
              .index = 1,
              .uuid = "GPU-11111111-aaaa-bbbb-cccc-111111111111",
              .pci_bus_id = "0000:2a:00.0",
              .mig_enabled = true};
  mig.mig_devices.push_back({.uuid = "MIG-one", .profile = "3g.40gb", .gpu_instance_id = 1});
  mig.mig_devices.push_back({.uuid = "MIG-two", .profile = "3g.40gb", .gpu_instance_id = 2});
  inv.gpus.push_back(std::move(mig));
  return inv;
}

hw::HardwareEvent Xid(const std::string& uuid, uint64_t xid,
                      std::optional<unsigned int> gi = std::nullopt) {
  return {
      .kind = hw::HardwareEvent::Kind::kXid, .gpu_uuid = uuid, .xid = xid, .gpu_instance_id = gi};
}

class ReportTest : public ::testing::Test {
 protected:
  common::FakeClock clock_;
  HealthTracker tracker_{{}, clock_};
  const std::vector<hw::Inventory> inventories_ = {TwoGpus()};
};

TEST_F(ReportTest, HealthyNodeIsOneConditionLine) {
  const HealthReport report = BuildReport(tracker_, inventories_, clock_.Now());
  EXPECT_THAT(report.devices, SizeIs(2));
  EXPECT_TRUE(report.healthy());
  const kube::Condition c = NodeCondition(report);
  EXPECT_EQ(c.type, "GPUHealthy");
  EXPECT_EQ(c.status, "True");
  EXPECT_EQ(c.reason, "AllGPUsHealthy");
  EXPECT_EQ(c.message, "2 GPUs healthy");
}

TEST_F(ReportTest, ConditionNamesTheGpuAndTheError) {
  tracker_.Observe({Xid("GPU-00000000-aaaa-bbbb-cccc-000000000000", 79)});
  const HealthReport report = BuildReport(tracker_, inventories_, clock_.Now());
  EXPECT_EQ(report.unhealthy_count(), 1);
  const kube::Condition c = NodeCondition(report);
  EXPECT_EQ(c.status, "False");
  EXPECT_EQ(c.reason, "XidError");
  EXPECT_THAT(c.message, HasSubstr("1 of 2 GPUs unhealthy: GPU 0 (GPU-00000000-aaa..., "
                                   "0000:17:00.0): XID 79 since "));
}

TEST_F(ReportTest, AGpuDiscoveryCouldNotDescribeIsInTheConditionNotTheFile) {
  std::vector<hw::Inventory> inventories = {TwoGpus()};
  hw::Inventory& inventory = inventories[0];
  inventory.unavailable.push_back(
      {.index = 2, .reason = "nvmlDeviceGetHandleByIndex_v2 (GPU 2): Insufficient Permissions"});
  const absl::Time seen = clock_.Now();
  EXPECT_TRUE(tracker_.ObserveUnavailable(inventories));
  clock_.Advance(absl::Minutes(1));
  EXPECT_FALSE(tracker_.ObserveUnavailable(inventories));
  const HealthReport report = BuildReport(tracker_, inventories, clock_.Now());
  EXPECT_EQ(report.unhealthy_count(), 1);
  const kube::Condition c = NodeCondition(report);
  EXPECT_EQ(c.status, "False");
  EXPECT_EQ(c.reason, "GpuUnavailable");
  EXPECT_THAT(c.message, HasSubstr("GPU 2: not usable: nvmlDeviceGetHandleByIndex_v2 (GPU 2): "
                                   "Insufficient Permissions since "));
  // Since the first sample that saw it, so a report a minute later is no transition.
  EXPECT_EQ(tracker_.CheckUnavailable(0, 2)->since, seen);
  // A second accelerator's inventory (another vendor) neither hides nor shares it.
  inventories.push_back(hw::Inventory{});
  EXPECT_FALSE(tracker_.ObserveUnavailable(inventories));
  EXPECT_TRUE(tracker_.CheckUnavailable(0, 2).has_value());
  EXPECT_FALSE(tracker_.CheckUnavailable(1, 2).has_value());
  EXPECT_EQ(HealthFileJson(report, clock_.Now()).find("not usable"), std::string::npos);
  // Once discovery describes it again, it is gone.
  inventories[0].unavailable.clear();
  EXPECT_TRUE(tracker_.ObserveUnavailable(inventories));
  EXPECT_FALSE(tracker_.CheckUnavailable(0, 2).has_value());
}

TEST_F(ReportTest, DifferentProblemsGiveMultipleProblems) {
  tracker_.Observe({Xid("GPU-00000000-aaaa-bbbb-cccc-000000000000", 79),
                    {.kind = hw::HardwareEvent::Kind::kDoubleBitEcc,
                     .gpu_uuid = "GPU-11111111-aaaa-bbbb-cccc-111111111111"}});
  const kube::Condition c = NodeCondition(BuildReport(tracker_, inventories_, clock_.Now()));
  EXPECT_EQ(c.reason, "MultipleProblems");
  EXPECT_THAT(c.message, HasSubstr("double-bit ECC error"));
  EXPECT_THAT(c.message, HasSubstr("XID 79"));
}

TEST_F(ReportTest, TheRecoveryActionConditionNamesTheLargestAction) {
  kube::Condition c = RecoveryActionCondition(BuildReport(tracker_, inventories_, clock_.Now()));
  EXPECT_EQ(c.type, "GPURecoveryAction");
  EXPECT_EQ(c.status, "False");
  EXPECT_EQ(c.reason, "None");
  tracker_.Observe({Xid("GPU-11111111-aaaa-bbbb-cccc-111111111111", 48)});
  c = RecoveryActionCondition(BuildReport(tracker_, inventories_, clock_.Now()));
  EXPECT_EQ(c.status, "True");
  EXPECT_EQ(c.reason, "ResetGpu");
  tracker_.Observe({Xid("GPU-00000000-aaaa-bbbb-cccc-000000000000", 79)});
  const HealthReport report = BuildReport(tracker_, inventories_, clock_.Now());
  c = RecoveryActionCondition(report);
  EXPECT_EQ(c.reason, "RebootNode");
  EXPECT_THAT(c.message, HasSubstr("RebootNode for GPU 0"));
  EXPECT_THAT(c.message, HasSubstr("(XID 79)"));
  EXPECT_THAT(c.message, Not(HasSubstr("XID 48"))) << "a reboot also resets";
  EXPECT_THAT(NodeCondition(report).message, HasSubstr("XID 48 since"));
  EXPECT_THAT(NodeCondition(report).message, HasSubstr(", needs ResetGpu"));
  // The health file carries the action to the device plugin.
  absl::StatusOr<std::map<std::string, Unhealthy>> file =
      ParseHealthFile(HealthFileJson(report, clock_.Now() + absl::Minutes(1)), clock_.Now());
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->at("GPU-00000000-aaaa-bbbb-cccc-000000000000").action, XidAction::kRebootNode);
}

TEST_F(ReportTest, MigInstanceIsReportedAlone) {
  tracker_.Observe({Xid("GPU-11111111-aaaa-bbbb-cccc-111111111111", 95, 2)});
  const HealthReport report = BuildReport(tracker_, inventories_, clock_.Now());
  ASSERT_THAT(report.devices, SizeIs(3));
  const DeviceHealth& mig = report.devices[2];
  EXPECT_EQ(mig.gpu_instance_id, 2u);
  EXPECT_EQ(mig.mig_uuid, "MIG-two");
  ASSERT_TRUE(mig.problem.has_value());
  EXPECT_EQ(mig.problem->code, "XidError");
  EXPECT_THAT(NodeCondition(report).message, HasSubstr("MIG instance 2 of GPU 1"));
}

TEST_F(ReportTest, DiffReportsOnsetsAndRecoveries) {
  const std::string gpu0 = "GPU-00000000-aaaa-bbbb-cccc-000000000000";
  const HealthReport healthy = BuildReport(tracker_, inventories_, clock_.Now());
  const absl::Time onset = clock_.Now();
  tracker_.Observe({Xid(gpu0, 48)});
  clock_.Advance(absl::Seconds(5));
  const HealthReport sick = BuildReport(tracker_, inventories_, clock_.Now());
  std::vector<HealthTransition> down = Diff(healthy, sick);
  ASSERT_THAT(down, SizeIs(1));
  EXPECT_FALSE(down[0].recovered);
  EXPECT_EQ(down[0].time, onset);
  EXPECT_EQ(down[0].device.gpu_uuid, gpu0);
  EXPECT_THAT(Diff(sick, sick), SizeIs(0));

  // gpuop reset the GPU: the reset XID's action has happened.
  clock_.Advance(absl::Minutes(10));
  struct Reset : RecoveryEvidence {
    explicit Reset(absl::Time when) : at(when) {}
    std::string BootId() const override { return ""; }
    absl::Time DriverLoadedAt() const override { return absl::InfinitePast(); }
    absl::Time GpuResetAt(const std::string&) const override { return at; }
    absl::Time at;
  };
  EXPECT_TRUE(tracker_.ObserveRecovery(Reset(clock_.Now())));
  const HealthReport well = BuildReport(tracker_, inventories_, clock_.Now());
  std::vector<HealthTransition> up = Diff(sick, well);
  ASSERT_THAT(up, SizeIs(1));
  EXPECT_TRUE(up[0].recovered);
  ASSERT_TRUE(up[0].previous.has_value());
  EXPECT_EQ(up[0].previous->reason, "XID 48");
  EXPECT_EQ(up[0].time, clock_.Now());
}

TEST_F(ReportTest, HealthFileRoundTripsUnhealthyGpusUntilItExpires) {
  tracker_.Observe({Xid("GPU-00000000-aaaa-bbbb-cccc-000000000000", 79),
                    Xid("GPU-11111111-aaaa-bbbb-cccc-111111111111", 95, 1)});
  const HealthReport report = BuildReport(tracker_, inventories_, clock_.Now());
  const std::string file = HealthFileJson(report, clock_.Now() + absl::Minutes(2));
  EXPECT_THAT(file, HasSubstr("\"migInstances\""));
  absl::StatusOr<std::map<std::string, Unhealthy>> parsed = ParseHealthFile(file, clock_.Now());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_THAT(*parsed, SizeIs(1));  // whole GPUs only: the MIG instance is the plugin's own call
  const Unhealthy& u = parsed->at("GPU-00000000-aaaa-bbbb-cccc-000000000000");
  EXPECT_EQ(u.code, "XidError");
  EXPECT_EQ(u.reason, "XID 79");
  EXPECT_EQ(absl::ToUnixSeconds(u.since), absl::ToUnixSeconds(clock_.Now()));

  parsed = ParseHealthFile(file, clock_.Now() + absl::Minutes(3));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->empty()) << "an expired file must not hold GPUs unhealthy";
}

TEST_F(ReportTest, MalformedHealthFileNamesTheField) {
  const absl::Time now = clock_.Now();
  EXPECT_THAT(ParseHealthFile("{", now).status().message(), HasSubstr("not a JSON object"));
  EXPECT_THAT(ParseHealthFile("{}", now).status().message(), HasSubstr("$.expires"));
  EXPECT_THAT(ParseHealthFile(R"({"expires": "soon"})", now).status().message(),
              HasSubstr("$.expires"));
  EXPECT_THAT(ParseHealthFile(R"({"expires": "2999-01-01T00:00:00Z"})", now).status().message(),
              HasSubstr("$.gpus must be an array"));
  EXPECT_THAT(ParseHealthFile(R"({"expires": "2999-01-01T00:00:00Z",
                                  "gpus": [{"uuid": "GPU-a", "healthy": "no"}]})",
                              now)
                  .status()
                  .message(),
              HasSubstr("$.gpus[0].healthy must be true or false"));
  EXPECT_THAT(ParseHealthFile(R"({"expires": "2999-01-01T00:00:00Z",
                                  "gpus": [{"uuid": "GPU-a", "healthy": false}]})",
                              now)
                  .status()
                  .message(),
              HasSubstr("$.gpus[0].code must be a string"));
}

}  // namespace
}  // namespace gpuop::agent
