#include "agent/power/energy_accountant.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/power/power_test_util.h"

namespace gpuop::agent::power {
namespace {

using ::testing::DoubleEq;
using ::testing::UnorderedElementsAre;

hw::Sample Readings(const std::vector<std::optional<double>>& joules) {
  hw::Sample sample;
  for (size_t i = 0; i < joules.size(); ++i) {
    sample.gpus.push_back({.index = static_cast<int>(i), .energy_joules = joules[i]});
  }
  return sample;
}

TEST(EnergyAccountantTest, SplitsEachIntervalAmongItsHolders) {
  EnergyAccountant accountant;
  accountant.Observe(Readings({1000, 5000}), {});  // starts the intervals
  EXPECT_EQ(accountant.GpuJoules(0), 0);
  accountant.Observe(Readings({1600, 5300}),
                     {{0, {{"ml/a", 1}}}, {1, {{"ml/b", 2.0 / 7}, {"ml/c", 1.0 / 7}}}});
  EXPECT_THAT(accountant.PodJoules("ml/a"), DoubleEq(600));
  EXPECT_THAT(accountant.PodJoules("ml/b"), DoubleEq(300 * 2.0 / 7));
  EXPECT_THAT(accountant.PodJoules("ml/c"), DoubleEq(300 * 1.0 / 7));
  EXPECT_THAT(accountant.IdleJoules(1), DoubleEq(300 * 4.0 / 7));  // free MIG slices
  EXPECT_THAT(accountant.GpuJoules(1), DoubleEq(300));
  EXPECT_EQ(accountant.IdleJoules(0), 0);

  // Three pods time-share GPU 0: shares above 1 are scaled down.
  accountant.Observe(Readings({1900, 5300}), {{0, {{"ml/a", 1}, {"ml/d", 1}, {"ml/e", 1}}}});
  EXPECT_THAT(accountant.PodJoules("ml/a"), DoubleEq(700));
  EXPECT_THAT(accountant.PodJoules("ml/d"), DoubleEq(100));
  EXPECT_THAT(accountant.GpuJoules(0), DoubleEq(900));
  EXPECT_THAT(
      accountant.PodTotals(),
      UnorderedElementsAre(::testing::Key("ml/a"), ::testing::Key("ml/b"), ::testing::Key("ml/c"),
                           ::testing::Key("ml/d"), ::testing::Key("ml/e")));
  accountant.ForgetPod("ml/e");
  EXPECT_EQ(accountant.PodJoules("ml/e"), 0);
  EXPECT_THAT(accountant.GpuJoules(0), DoubleEq(900));
}

TEST(EnergyAccountantTest, CounterResetsAndGapsAreNotGuessed) {
  EnergyAccountant accountant;
  accountant.Observe(Readings({1000}), {});
  accountant.Observe(Readings({40}), {{0, {{"ml/a", 1}}}});  // the driver reloaded
  EXPECT_THAT(accountant.GpuJoules(0), DoubleEq(40));
  accountant.Observe(Readings({std::nullopt}), {{0, {{"ml/a", 1}}}});  // lost for a while
  accountant.Observe(Readings({900}), {{0, {{"ml/a", 1}}}});           // a new interval starts
  EXPECT_THAT(accountant.GpuJoules(0), DoubleEq(40));
  accountant.Observe(Readings({1000}), {});  // unallocated: all idle
  EXPECT_THAT(accountant.GpuJoules(0), DoubleEq(140));
  EXPECT_THAT(accountant.IdleJoules(0), DoubleEq(100));
  EXPECT_THAT(accountant.PodJoules("ml/a"), DoubleEq(40));
}

TEST(EnergyAccountantTest, HoldersAndCountersFromTheFakeMachine) {
  testing::FakeMachine machine("a100-8x-mig");
  ASSERT_TRUE(machine.ok());
  auto inventory = machine.nvml().Discover();
  ASSERT_TRUE(inventory.ok());
  const hw::Gpu& gpu0 = inventory->gpus[0];  // 7 x 1g.5gb
  const hw::Gpu& gpu1 = inventory->gpus[1];  // 2 x 3g.20gb
  const std::vector<DeviceAllocation> allocations = {
      {.pod_namespace = "ml", .pod_name = "a", .device_id = gpu0.mig_devices[0].uuid},
      {.pod_namespace = "ml", .pod_name = "a", .device_id = gpu0.mig_devices[1].uuid},
      {.pod_namespace = "ml", .pod_name = "b", .device_id = gpu1.mig_devices[0].uuid},
      {.pod_namespace = "ml", .pod_name = "c", .device_id = inventory->gpus[5].uuid + "::1"},
      {.pod_namespace = "ml", .pod_name = "d", .device_id = "GPU-not-on-this-node"}};
  EXPECT_EQ(GpuOfDevice(*inventory, gpu1.mig_devices[1].uuid), 1);
  EXPECT_EQ(GpuOfDevice(*inventory, inventory->gpus[5].uuid + "::1"), 5);
  EXPECT_FALSE(GpuOfDevice(*inventory, "GPU-not-on-this-node").has_value());
  EXPECT_THAT(DeviceShare(*inventory, gpu1.mig_devices[0].uuid), DoubleEq(3.0 / 7));

  const auto holders = HoldersFromAllocations(*inventory, allocations);
  ASSERT_EQ(holders.size(), 3u);
  ASSERT_EQ(holders.at(0).size(), 1u);
  EXPECT_THAT(holders.at(0)[0].share, DoubleEq(2.0 / 7));
  EXPECT_THAT(holders.at(1)[0].share, DoubleEq(3.0 / 7));
  EXPECT_THAT(holders.at(5)[0].share, DoubleEq(1));

  // The fake's energy counters integrate the draw over scenario time (frozen, moved by hand).
  EnergyAccountant accountant;
  auto first = machine.nvml().TakeSample();
  ASSERT_TRUE(first.ok());
  accountant.Observe(*first, holders);
  machine.Control("advance 60s");
  auto second = machine.nvml().TakeSample();
  ASSERT_TRUE(second.ok());
  accountant.Observe(*second, holders);
  const double gpu5 = *second->gpus[5].energy_joules - *first->gpus[5].energy_joules;
  EXPECT_GT(gpu5, 0);
  EXPECT_THAT(accountant.GpuJoules(5), DoubleEq(gpu5));
  EXPECT_THAT(accountant.PodJoules("ml/c"), DoubleEq(gpu5));
  const double gpu0_joules = accountant.GpuJoules(0);
  EXPECT_THAT(accountant.PodJoules("ml/a"), DoubleEq(gpu0_joules * 2 / 7));
  EXPECT_THAT(accountant.IdleJoules(0), DoubleEq(gpu0_joules * 5 / 7));
}

}  // namespace
}  // namespace gpuop::agent::power
