#include "operator/upgrade/slots.h"

#include <gtest/gtest.h>

namespace gpuop::op::upgrade {
namespace {

struct SlotCase {
  const char* name;
  SlotCounts counts;
  int64_t max_parallel;
  IntOrPercent max_unavailable;
  int64_t available;
  const char* limit;
};

class SlotsTest : public ::testing::TestWithParam<SlotCase> {};

TEST_P(SlotsTest, Computes) {
  const SlotCase& c = GetParam();
  const Slots slots = ComputeSlots(c.counts, c.max_parallel, c.max_unavailable);
  EXPECT_EQ(slots.available, c.available);
  EXPECT_EQ(slots.limit, c.limit);
}

INSTANTIATE_TEST_SUITE_P(
    Table, SlotsTest,
    ::testing::Values(SlotCase{"MaxParallelLimits",
                               {.total = 10},
                               2,
                               {.value = 100, .percent = true},
                               2,
                               "0 nodes are upgrading and spec.upgrade.maxParallel is 2"},
                      SlotCase{"InProgressUseMaxParallel",
                               {.total = 10, .in_progress = 1, .unavailable = 1},
                               2,
                               {.value = 100, .percent = true},
                               1,
                               "1 node is upgrading and spec.upgrade.maxParallel is 2"},
                      SlotCase{"PercentRoundsUp",
                               {.total = 10},
                               0,
                               {.value = 25, .percent = true},
                               3,
                               "spec.upgrade.maxUnavailable is 25% of 10 nodes, 3"},
                      SlotCase{"UnavailableUseMaxUnavailable",
                               {.total = 4, .unavailable = 1},
                               0,
                               {.value = 3},
                               2,
                               "1 node is unavailable (cordoned, NotReady or being cordoned) and "
                               "spec.upgrade.maxUnavailable is 3"},
                      SlotCase{"NoneWhenTooManyUnavailable",
                               {.total = 4, .unavailable = 2},
                               5,
                               {.value = 2},
                               0,
                               "2 nodes are unavailable (cordoned, NotReady or being cordoned) and "
                               "spec.upgrade.maxUnavailable is 2"},
                      SlotCase{"NeverNegative",
                               {.total = 4, .in_progress = 3, .unavailable = 0},
                               1,
                               {.value = 4},
                               0,
                               "3 nodes are upgrading and spec.upgrade.maxParallel is 1"}),
    [](const ::testing::TestParamInfo<SlotCase>& p) { return p.param.name; });

}  // namespace
}  // namespace gpuop::op::upgrade
