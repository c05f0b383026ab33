// The applier against the fake NVML machine: every transition is checked by discovering the
// GPUs again, as a real node would be.
#include "agent/mig/mig_applier.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/mig/forwarding_accelerator.h"
#include "test/fakes/nvml/fake_machine.h"

namespace gpuop::agent::mig {
namespace {

using fakes::FakeMachine;
using ::testing::HasSubstr;

DesiredLayout All(int gpus, const GpuLayout& layout) {
  DesiredLayout desired;
  for (int i = 0; i < gpus; ++i) desired[i] = layout;
  return desired;
}

const GpuLayout kBalanced{.mig_enabled = true,
                          .mig_devices = {{"1g.5gb", 2}, {"2g.10gb", 1}, {"3g.20gb", 1}}};

// Plans against the machine, applies, and expects every GPU to succeed.
ApplyResult PlanAndApply(hw::Accelerator& accelerator, const DesiredLayout& desired) {
  auto inventory = accelerator.Discover();
  EXPECT_TRUE(inventory.ok()) << inventory.status();
  auto plan = PlanLayout(*inventory, desired);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? ApplyLayoutPlan(accelerator, *plan) : ApplyResult{};
}

class MigApplierTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(machine_.ok()); }
  FakeMachine machine_{"a100-8x-mig"};
};

TEST_F(MigApplierTest, AllDisabled) {
  const ApplyResult result = PlanAndApply(machine_.nvml(), All(8, {.mig_enabled = false}));
  ASSERT_TRUE(result.status().ok()) << result.status();
  ASSERT_EQ(result.gpus.size(), 8u);
  for (const GpuOutcome& g : result.gpus) {
    EXPECT_EQ(g.changed, g.gpu_index < 4) << g.gpu;
    EXPECT_EQ(g.layout, "MIG disabled");
  }
  for (const hw::Gpu& gpu : machine_.Discover().gpus) {
    EXPECT_FALSE(gpu.mig_enabled) << gpu.index;
    EXPECT_TRUE(gpu.mig_devices.empty()) << gpu.index;
  }
}

TEST_F(MigApplierTest, All1g5gbKeepsWhatIsAlreadyThere) {
  const hw::Inventory before = machine_.Discover();
  const ApplyResult result =
      PlanAndApply(machine_.nvml(), All(8, {.mig_enabled = true, .mig_devices = {{"1g.5gb", 7}}}));
  ASSERT_TRUE(result.status().ok()) << result.status();
  EXPECT_FALSE(result.gpus[0].changed);
  const hw::Inventory after = machine_.Discover();
  for (const hw::Gpu& gpu : after.gpus) {
    EXPECT_TRUE(gpu.mig_enabled) << gpu.index;
    ASSERT_EQ(gpu.mig_devices.size(), 7u) << gpu.index;
    for (const hw::MigDevice& d : gpu.mig_devices) EXPECT_EQ(d.profile, "1g.5gb");
  }
  // GPU 0 was in place: its MIG devices (and the pods holding them) are untouched.
  for (size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(after.gpus[0].mig_devices[i].uuid, before.gpus[0].mig_devices[i].uuid);
  }
  // GPU 2 kept its 1g.5gb.
  const std::string kept = before.gpus[2].mig_devices.back().uuid;
  EXPECT_TRUE(std::any_of(after.gpus[2].mig_devices.begin(), after.gpus[2].mig_devices.end(),
                          [&](const hw::MigDevice& d) { return d.uuid == kept; }));
  EXPECT_EQ(result.Summary(),
            "GPU 0: 7x1g.5gb; GPU 1: 7x1g.5gb; GPU 2: 7x1g.5gb; GPU 3: 7x1g.5gb; GPU 4: "
            "7x1g.5gb; GPU 5: 7x1g.5gb; GPU 6: 7x1g.5gb; GPU 7: 7x1g.5gb");
}

TEST_F(MigApplierTest, AllBalancedFromEveryStartingPoint) {
  const ApplyResult result = PlanAndApply(machine_.nvml(), All(8, kBalanced));
  ASSERT_TRUE(result.status().ok()) << result.status();
  for (const hw::Gpu& gpu : machine_.Discover().gpus) {
    EXPECT_TRUE(InPlace(gpu, kBalanced)) << gpu.index << ": " << DescribeLayout(CurrentLayout(gpu));
  }
  // Applying again finds everything in place.
  auto plan = PlanLayout(machine_.Discover(), All(8, kBalanced));
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->in_place());
}

TEST_F(MigApplierTest, KeptInstanceInTheWayFallsBackToARebuild) {
  // GPU 1 has 3g.20gb at placements 0 and 4; a 4g.20gb fits only at 0, where the kept 3g.20gb
  // is.
  const GpuLayout layout{.mig_enabled = true, .mig_devices = {{"4g.20gb", 1}, {"3g.20gb", 1}}};
  const ApplyResult result = PlanAndApply(machine_.nvml(), {{1, layout}});
  ASSERT_TRUE(result.status().ok()) << result.status();
  EXPECT_TRUE(result.gpus[0].rebuilt);
  EXPECT_TRUE(InPlace(machine_.Discover().gpus[1], layout));
}

TEST_F(MigApplierTest, LayoutThatDoesNotFitFailsWithTheGpuAndProfile) {
  // GPU 4 has MIG off, so its profile table is known only after the mode change.
  const ApplyResult result =
      PlanAndApply(machine_.nvml(), {{4, {.mig_enabled = true, .mig_devices = {{"4g.20gb", 2}}}},
                                     {5, {.mig_enabled = true, .mig_devices = {{"7g.40gb", 1}}}}});
  const absl::Status status = result.status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("GPU 4 (NVIDIA A100-SXM4-40GB): 2x4g.20gb does not fit: at most 1 fit"));
  // The other GPU was still applied.
  ASSERT_EQ(result.gpus.size(), 2u);
  EXPECT_TRUE(result.gpus[1].status.ok()) << result.gpus[1].status;
  EXPECT_EQ(machine_.Discover().gpus[5].mig_devices.size(), 1u);
}

TEST_F(MigApplierTest, ProfileTheGpuDoesNotOfferIsNamed) {
  const ApplyResult result =
      PlanAndApply(machine_.nvml(), {{6, {.mig_enabled = true, .mig_devices = {{"1g.10gb", 7}}}}});
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("GPU 6 (NVIDIA A100-SXM4-40GB): 7x1g.10gb does not fit: at most 4 fit"));
}

// A driver that records the mode change but defers it to a GPU reset.
class DeferredReset : public ForwardingAccelerator {
 public:
  DeferredReset(hw::Accelerator& target, bool forward)
      : ForwardingAccelerator(target), forward_(forward) {}
  absl::StatusOr<bool> SetMigMode(int gpu, bool enabled) override {
    if (forward_) {
      absl::StatusOr<bool> set = target_.SetMigMode(gpu, enabled);
      if (!set.ok()) return set;
    }
    return true;
  }

 private:
  bool forward_;
};

TEST_F(MigApplierTest, ModeChangeWaitingForAResetFails) {
  DeferredReset deferred(machine_.nvml(), /*forward=*/false);
  const ApplyResult result =
      PlanAndApply(deferred, {{4, {.mig_enabled = true, .mig_devices = {{"7g.40gb", 1}}}}});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("GPU 4 (NVIDIA A100-SXM4-40GB): MIG mode enabled is pending a GPU reset "
                        "(the driver reports the GPU in use or a reset required)"));
}

TEST_F(MigApplierTest, ResetReportedButModeTookEffectSucceeds) {
  DeferredReset deferred(machine_.nvml(), /*forward=*/true);
  const ApplyResult result =
      PlanAndApply(deferred, {{4, {.mig_enabled = true, .mig_devices = {{"7g.40gb", 1}}}}});
  EXPECT_TRUE(result.status().ok()) << result.status();
}

TEST_F(MigApplierTest, CheckStopsTheApplyBetweenOperations) {
  auto inventory = machine_.nvml().Discover();
  ASSERT_TRUE(inventory.ok());
  auto plan = PlanLayout(*inventory, All(8, {.mig_enabled = false}));
  ASSERT_TRUE(plan.ok());
  std::vector<std::string> steps;
  const ApplyResult result =
      ApplyLayoutPlan(machine_.nvml(), *plan, [&](const std::string& step) -> absl::Status {
        steps.push_back(step);
        if (steps.size() > 3) return absl::DeadlineExceededError("deadline passed");
        return absl::OkStatus();
      });
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(steps[0], "destroying GPU instance " +
                          std::to_string(inventory->gpus[0].mig_devices[0].gpu_instance_id) +
                          " on GPU 0 (NVIDIA A100-SXM4-40GB)");
  // Three instances of GPU 0 were destroyed, nothing else was touched.
  const hw::Inventory after = machine_.Discover();
  EXPECT_EQ(after.gpus[0].mig_devices.size(), 4u);
  EXPECT_EQ(after.gpus[1].mig_devices.size(), 2u);
  // GPUs already in place are not failures.
  for (const GpuOutcome& g : result.gpus) EXPECT_EQ(g.status.ok(), g.gpu_index >= 4) << g.gpu;
}

}  // namespace
}  // namespace gpuop::agent::mig
