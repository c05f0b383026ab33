#include "agent/exporter/process_stats.h"

#include <gtest/gtest.h>

namespace gpuop::agent::exporter {
namespace {

TEST(ExporterProcessStatsTest, ParsesStatAndStatm) {
  // The command name may hold spaces and parentheses.
  const char stat[] =
      "4242 (gpuop (agent) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 7 0 100 "
      "123456789 1792 18446744073709551615";
  auto stats = ParseProcessStats(stat, "30000 1792 900 100 0 2000 0\n", 4096, 100);
  ASSERT_TRUE(stats.has_value());
  EXPECT_EQ(stats->resident_memory_bytes, 1792.0 * 4096);
  EXPECT_DOUBLE_EQ(stats->cpu_seconds, 3.0);
  EXPECT_FALSE(ParseProcessStats("garbage", "1 2", 4096, 100).has_value());
  EXPECT_FALSE(ParseProcessStats(stat, "", 4096, 100).has_value());
}

TEST(ExporterProcessStatsTest, ReadsItsOwnProcess) {
  auto stats = ReadProcessStats();
  ASSERT_TRUE(stats.has_value());
  EXPECT_GT(stats->resident_memory_bytes, 0);
  EXPECT_GE(stats->cpu_seconds, 0);
}

}  // namespace
}  // namespace gpuop::agent::exporter
