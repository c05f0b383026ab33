#include "agent/mig/mig_planner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gpuop::agent::mig {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kMiB = 1024 * 1024;
constexpr char kA100[] = "NVIDIA A100-SXM4-40GB";
constexpr char kH100[] = "NVIDIA H100 80GB HBM3";

std::vector<hw::MigProfile> A100Profiles() {
  return {{"1g.5gb", 19, 1, 7, 4864 * kMiB},  {"1g.5gb+me", 20, 1, 1, 4864 * kMiB},
          {"1g.10gb", 15, 1, 4, 9856 * kMiB}, {"2g.10gb", 14, 2, 3, 9856 * kMiB},
          {"3g.20gb", 9, 3, 2, 19968 * kMiB}, {"4g.20gb", 5, 4, 1, 19968 * kMiB},
          {"7g.40gb", 0, 7, 1, 40192 * kMiB}};
}

std::vector<hw::MigProfile> H100Profiles() {
  return {{"1g.10gb", 19, 1, 7, 9984 * kMiB},  {"1g.20gb", 15, 1, 4, 20096 * kMiB},
          {"2g.20gb", 14, 2, 3, 20096 * kMiB}, {"3g.40gb", 9, 3, 2, 40448 * kMiB},
          {"4g.40gb", 5, 4, 1, 40448 * kMiB},  {"7g.80gb", 0, 7, 1, 81152 * kMiB}};
}

// A GPU with MIG on and the given GPU instances (profile, compute instances).
hw::Gpu MigGpu(int index, const std::vector<std::pair<std::string, int>>& instances,
               const char* product = kA100) {
  hw::Gpu gpu{.index = index, .product = product, .mig_capable = true, .mig_enabled = true};
  gpu.mig_profiles = product == std::string(kA100) ? A100Profiles() : H100Profiles();
  unsigned int gi = 1;
  for (const auto& [profile, computes] : instances) {
    for (int ci = 0; ci < computes; ++ci) {
      gpu.mig_devices.push_back({.uuid = absl::StrCat("MIG-", index, "-", gi, "-", ci),
                                 .profile = profile,
                                 .gpu_instance_id = gi,
                                 .compute_instance_id = static_cast<unsigned int>(ci)});
    }
    ++gi;
  }
  return gpu;
}

// MIG off: NVML reports no profile table.
hw::Gpu MigOffGpu(int index, const char* product = kA100) {
  return {.index = index, .product = product, .mig_capable = true};
}

// The a100-8x-mig preset: GPU 0 7x1g.5gb, GPU 1 2x3g.20gb, GPU 2 4g.20gb (two compute
// instances) + 2g.10gb + 1g.5gb, GPU 3 MIG on and empty, GPUs 4-7 MIG off.
hw::Inventory A100Preset() {
  hw::Inventory inv;
  inv.gpus.push_back(MigGpu(0, std::vector<std::pair<std::string, int>>(7, {"1g.5gb", 1})));
  inv.gpus.push_back(MigGpu(1, {{"3g.20gb", 1}, {"3g.20gb", 1}}));
  inv.gpus.push_back(MigGpu(2, {{"4g.20gb", 2}, {"2g.10gb", 1}, {"1g.5gb", 1}}));
  inv.gpus.push_back(MigGpu(3, {}));
  for (int i = 4; i < 8; ++i) inv.gpus.push_back(MigOffGpu(i));
  return inv;
}

DesiredLayout All(int gpus, GpuLayout layout) {
  DesiredLayout desired;
  for (int i = 0; i < gpus; ++i) desired[i] = layout;
  return desired;
}

// "destroy 5; mode on (replan); create 3g.20gb 2g.10gb" or "in place".
std::string Render(const GpuPlan& plan) {
  if (plan.in_place()) return "in place";
  std::vector<std::string> parts;
  if (!plan.destroy.empty()) parts.push_back(absl::StrCat("destroy ", plan.destroy.size()));
  if (plan.set_mig_mode.has_value()) {
    parts.push_back(absl::StrCat("mode ", *plan.set_mig_mode ? "on" : "off",
                                 plan.replan_after_mode_change ? " (replan)" : ""));
  }
  if (!plan.create.empty()) parts.push_back("create " + absl::StrJoin(plan.create, " "));
  return absl::StrJoin(parts, "; ");
}

struct Transition {
  const char* name;
  DesiredLayout desired;
  std::vector<std::string> expected;  // per GPU 0..7
};

class A100TransitionTest : public ::testing::TestWithParam<Transition> {};

TEST_P(A100TransitionTest, PlansEveryGpu) {
  auto plan = PlanLayout(A100Preset(), GetParam().desired);
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::vector<std::string> rendered;
  for (const GpuPlan& p : plan->gpus) rendered.push_back(Render(p));
  EXPECT_EQ(rendered, GetParam().expected);
}

const std::string k7x1g = "create 1g.5gb 1g.5gb 1g.5gb 1g.5gb 1g.5gb 1g.5gb 1g.5gb";

INSTANTIATE_TEST_SUITE_P(
    A100Preset, A100TransitionTest,
    ::testing::Values(
        Transition{"AllDisabled",
                   All(8, {.mig_enabled = false}),
                   {"destroy 7; mode off", "destroy 2; mode off", "destroy 3; mode off", "mode off",
                    "in place", "in place", "in place", "in place"}},
        Transition{"All1g5gb",
                   All(8, {.mig_enabled = true, .mig_devices = {{"1g.5gb", 7}}}),
                   {"in place", "destroy 2; " + k7x1g,
                    // 4g.20gb and 2g.10gb go, the 1g.5gb stays.
                    "destroy 2; create 1g.5gb 1g.5gb 1g.5gb 1g.5gb 1g.5gb 1g.5gb", k7x1g,
                    "mode on (replan); " + k7x1g, "mode on (replan); " + k7x1g,
                    "mode on (replan); " + k7x1g, "mode on (replan); " + k7x1g}},
        Transition{"AllBalanced",
                   All(8, {.mig_enabled = true,
                           .mig_devices = {{"1g.5gb", 2}, {"2g.10gb", 1}, {"3g.20gb", 1}}}),
                   {"destroy 5; create 3g.20gb 2g.10gb", "destroy 1; create 2g.10gb 1g.5gb 1g.5gb",
                    // The 4g.20gb with two compute instances is not a match; the others are kept.
                    "destroy 1; create 3g.20gb 1g.5gb", "create 3g.20gb 2g.10gb 1g.5gb 1g.5gb",
                    "mode on (replan); create 3g.20gb 2g.10gb 1g.5gb 1g.5gb",
                    "mode on (replan); create 3g.20gb 2g.10gb 1g.5gb 1g.5gb",
                    "mode on (replan); create 3g.20gb 2g.10gb 1g.5gb 1g.5gb",
                    "mode on (replan); create 3g.20gb 2g.10gb 1g.5gb 1g.5gb"}},
        Transition{"OnlySomeGpus",
                   {{1, {.mig_enabled = true, .mig_devices = {{"3g.20gb", 2}}}},
                    {3, {.mig_enabled = true, .mig_devices = {{"7g.40gb", 1}}}},
                    {5, {.mig_enabled = false}}},
                   {"in place", "create 7g.40gb", "in place"}}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(MigPlannerTest, MixedLayoutByIndexAndProduct) {
  hw::Inventory inv;
  inv.gpus.push_back(MigGpu(0, {}));
  inv.gpus.push_back(MigGpu(1, {{"7g.40gb", 1}}));
  inv.gpus.push_back(MigGpu(2, {}, kH100));
  inv.gpus.push_back(MigOffGpu(3, kH100));
  auto config = ParseMigConfig(R"(
version: v1
mig-configs:
  mixed:
    - devices: [0, 1]
      mig-enabled: true
      mig-devices: {"3g.20gb": 1, "4g.20gb": 1}
    - devices: all
      device-filter: NVIDIA H100 80GB HBM3
      mig-enabled: true
      mig-devices: {"1g.10gb": 7}
)",
                               "mixed.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  auto desired = ResolveLayout(*config, "mixed", inv.gpus);
  ASSERT_TRUE(desired.ok()) << desired.status();
  auto plan = PlanLayout(inv, *desired);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->gpus.size(), 4u);
  EXPECT_EQ(Render(plan->gpus[0]), "create 4g.20gb 3g.20gb");
  EXPECT_EQ(Render(plan->gpus[1]), "destroy 1; create 4g.20gb 3g.20gb");
  EXPECT_EQ(Render(plan->gpus[2]),
            "create 1g.10gb 1g.10gb 1g.10gb 1g.10gb 1g.10gb 1g.10gb 1g.10gb");
  EXPECT_EQ(Render(plan->gpus[3]),
            "mode on (replan); create 1g.10gb 1g.10gb 1g.10gb 1g.10gb 1g.10gb 1g.10gb 1g.10gb");
  EXPECT_EQ(plan->changing_gpus(), (std::vector<int>{0, 1, 2, 3}));
}

TEST(MigPlannerTest, InPlaceIsDetected) {
  const hw::Inventory inv = A100Preset();
  EXPECT_TRUE(InPlace(inv.gpus[0], {.mig_enabled = true, .mig_devices = {{"1g.5gb", 7}}}));
  EXPECT_TRUE(InPlace(inv.gpus[3], {.mig_enabled = true}));
  EXPECT_TRUE(InPlace(inv.gpus[4], {.mig_enabled = false}));
  EXPECT_FALSE(InPlace(inv.gpus[0], {.mig_enabled = true, .mig_devices = {{"1g.5gb", 6}}}));
  // Same profiles, but one GPU instance is split into two compute instances.
  EXPECT_FALSE(InPlace(
      inv.gpus[2],
      {.mig_enabled = true, .mig_devices = {{"4g.20gb", 1}, {"2g.10gb", 1}, {"1g.5gb", 1}}}));
  hw::Gpu pending = inv.gpus[4];
  pending.mig_pending_change = true;
  EXPECT_FALSE(InPlace(pending, {.mig_enabled = false}));
  auto plan = PlanGpu(pending, {.mig_enabled = false});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(Render(*plan), "mode off");  // cancels the pending enable

  auto in_place = PlanLayout(inv, {{0, {.mig_enabled = true, .mig_devices = {{"1g.5gb", 7}}}},
                                   {4, {.mig_enabled = false}}});
  ASSERT_TRUE(in_place.ok());
  EXPECT_TRUE(in_place->in_place());
  EXPECT_TRUE(in_place->changing_gpus().empty());
}

TEST(MigPlannerTest, RebuildDestroysEverything) {
  const hw::Inventory inv = A100Preset();
  auto plan =
      PlanGpu(inv.gpus[0],
              {.mig_enabled = true, .mig_devices = {{"1g.5gb", 2}, {"2g.10gb", 1}, {"3g.20gb", 1}}},
              PlanStrategy::kRebuild);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(Render(*plan), "destroy 7; create 3g.20gb 2g.10gb 1g.5gb 1g.5gb");
}

struct Misfit {
  const char* name;
  GpuLayout layout;
  const char* message;
};

class MigPlannerMisfitTest : public ::testing::TestWithParam<Misfit> {};

TEST_P(MigPlannerMisfitTest, NamesGpuAndProfile) {
  auto plan = PlanLayout(A100Preset(), {{3, GetParam().layout}});
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Capacity, MigPlannerMisfitTest,
    ::testing::Values(
        Misfit{"NotOffered",
               {.mig_enabled = true, .mig_devices = {{"1g.10gb", 1}, {"1g.12gb", 1}}},
               "GPU 3 (NVIDIA A100-SXM4-40GB): MIG profile \"1g.12gb\" is not offered "
               "(offered: 1g.5gb, 1g.5gb+me, 1g.10gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb)"},
        Misfit{"TooManyOfAProfile",
               {.mig_enabled = true, .mig_devices = {{"4g.20gb", 2}}},
               "GPU 3 (NVIDIA A100-SXM4-40GB): 2x4g.20gb does not fit: at most 1 fit"},
        Misfit{
            "TooManySlices",
            {.mig_enabled = true, .mig_devices = {{"4g.20gb", 1}, {"3g.20gb", 1}, {"1g.5gb", 1}}},
            "1x4g.20gb, 1x3g.20gb, 1x1g.5gb does not fit: it needs 8 compute slices and "
            "the GPU has 7"},
        Misfit{"TooMuchMemory",
               {.mig_enabled = true, .mig_devices = {{"1g.10gb", 4}, {"1g.5gb", 1}}},
               "does not fit: it needs 44288 MiB of memory and the GPU's MIG memory is "
               "40192 MiB"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(MigPlannerTest, NotMigCapableIsRefusedAndErrorsOfAllGpusAreJoined) {
  hw::Inventory inv;
  inv.gpus.push_back({.index = 0, .product = "NVIDIA L4"});
  inv.gpus.push_back(MigGpu(1, {}));
  auto plan = PlanLayout(inv, {{0, {.mig_enabled = true}},
                               {1, {.mig_enabled = true, .mig_devices = {{"9g.99gb", 1}}}}});
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()),
              HasSubstr("GPU 0 (NVIDIA L4): the layout enables MIG, but the GPU is not "
                        "MIG-capable; GPU 1 (NVIDIA A100-SXM4-40GB): MIG profile \"9g.99gb\""));
  // MIG off on a GPU without MIG is simply in place.
  auto off = PlanLayout(inv, {{0, {.mig_enabled = false}}});
  ASSERT_TRUE(off.ok());
  EXPECT_TRUE(off->in_place());
}

TEST(MigPlannerTest, CreationOrderIsLargestFirst) {
  const hw::Gpu gpu = MigGpu(0, {});
  EXPECT_EQ(CreationOrder(gpu, {{"1g.5gb", 1}, {"1g.10gb", 1}, {"7g.40gb", 1}, {"2g.10gb", 2}}),
            (std::vector<std::string>{"7g.40gb", "2g.10gb", "2g.10gb", "1g.10gb", "1g.5gb"}));
  EXPECT_EQ(DescribeGpu(gpu), "GPU 0 (NVIDIA A100-SXM4-40GB)");
  EXPECT_EQ(CurrentLayout(A100Preset().gpus[2]),
            (GpuLayout{.mig_enabled = true,
                       .mig_devices = {{"4g.20gb", 1}, {"2g.10gb", 1}, {"1g.5gb", 1}}}));
}

}  // namespace
}  // namespace gpuop::agent::mig

namespace gpuop::agent::mig {
namespace {

// A GPU instance of `profile` (`gi_slices` slices) holding one compute instance of `ci_slices`.
hw::MigDevice SplitDevice(unsigned int gi, const std::string& profile, unsigned int gi_slices,
                          unsigned int ci_slices) {
  hw::MigDevice device{.uuid = absl::StrCat("MIG-", gi), .profile = profile, .gpu_instance_id = gi};
  device.has_attributes = true;
  device.gpu_instance_slices = gi_slices;
  device.compute_instance_slices = ci_slices;
  return device;
}

// mig-parted's compute-instance profiles: "1c.3g.20gb" is a 3g.20gb GPU instance holding one
// compute instance of one slice; it fits, orders and matches by its GPU instance.
TEST(MigPlannerTest, ComputeInstanceProfilesPlanAsMigPartedDoes) {
  const hw::Gpu empty = MigGpu(3, {});
  absl::StatusOr<GpuPlan> plan = PlanGpu(
      empty,
      {.mig_enabled = true, .mig_devices = {{"1g.5gb", 1}, {"2g.10gb", 1}, {"1c.3g.20gb", 1}}});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->create, (std::vector<std::string>{"1c.3g.20gb", "2g.10gb", "1g.5gb"}));

  // Three slices of a three-slice GPU instance is the plain profile, as NVIDIA names it.
  plan = PlanGpu(empty, {.mig_enabled = true, .mig_devices = {{"3c.3g.20gb", 1}}});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->create, (std::vector<std::string>{"3g.20gb"}));

  plan = PlanGpu(empty, {.mig_enabled = true, .mig_devices = {{"4c.3g.20gb", 1}}});
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(plan.status().message(),
              HasSubstr("\"4c.3g.20gb\": a compute instance of 4 slices does not fit a GPU "
                        "instance of 3"));
  plan = PlanGpu(empty, {.mig_enabled = true, .mig_devices = {{"1c.9g.90gb", 1}}});
  EXPECT_THAT(plan.status().message(), HasSubstr("\"1c.9g.90gb\" is not offered"));
  plan = PlanGpu(empty, {.mig_enabled = true, .mig_devices = {{"1c.3g.20gb", 3}}});
  EXPECT_THAT(plan.status().message(), HasSubstr("at most 2 fit"));

  // Kept where it is, replaced where its compute instance is the wrong size.
  hw::Gpu gpu = MigGpu(3, {});
  gpu.mig_devices = {SplitDevice(1, "3g.20gb", 3, 1), SplitDevice(2, "3g.20gb", 3, 3)};
  const GpuLayout wanted{.mig_enabled = true, .mig_devices = {{"1c.3g.20gb", 2}}};
  EXPECT_FALSE(InPlace(gpu, wanted));
  plan = PlanGpu(gpu, wanted);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->destroy, (std::vector<unsigned int>{2}));
  EXPECT_EQ(plan->create, (std::vector<std::string>{"1c.3g.20gb"}));
  gpu.mig_devices[1] = SplitDevice(2, "3g.20gb", 3, 1);
  EXPECT_TRUE(InPlace(gpu, wanted));
  EXPECT_EQ(CurrentLayout(gpu).mig_devices, (std::map<std::string, int>{{"1c.3g.20gb", 2}}));
}

}  // namespace
}  // namespace gpuop::agent::mig
