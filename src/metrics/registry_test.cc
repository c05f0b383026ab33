#include "metrics/registry.h"

#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuop::metrics {
namespace {

using ::testing::HasSubstr;

TEST(RegistryTest, RendersCountersAndGaugesWithLabels) {
  Registry registry;
  auto& requests = registry.AddCounter("gpuop_requests_total", "Requests sent.", {"verb", "code"});
  auto& depth = registry.AddGauge("gpuop_queue_depth", "Items waiting.");
  requests.With({"GET", "200"}).Inc();
  requests.With({"GET", "200"}).Inc(2);
  requests.With({"POST", "409"}).Inc();
  depth.Get().Set(7);
  EXPECT_EQ(registry.Render(),
            "# HELP gpuop_requests_total Requests sent.\n"
            "# TYPE gpuop_requests_total counter\n"
            "gpuop_requests_total{verb=\"GET\",code=\"200\"} 3\n"
            "gpuop_requests_total{verb=\"POST\",code=\"409\"} 1\n"
            "# HELP gpuop_queue_depth Items waiting.\n"
            "# TYPE gpuop_queue_depth gauge\n"
            "gpuop_queue_depth 7\n");
}

TEST(RegistryTest, RendersHistogramBucketsCumulatively) {
  Registry registry;
  auto& latency = registry.AddHistogram("gpuop_latency_seconds", "Latency.", {"op"}, {0.1, 1});
  auto& h = latency.With({"sync"});
  h.Observe(0.05);
  h.Observe(0.1);  // On the bound: counts in that bucket.
  h.Observe(0.5);
  h.Observe(3);
  const std::string text = registry.Render();
  EXPECT_THAT(
      text, HasSubstr("gpuop_latency_seconds_bucket{op=\"sync\",le=\"0.10000000000000001\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("gpuop_latency_seconds_bucket{op=\"sync\",le=\"1\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("gpuop_latency_seconds_bucket{op=\"sync\",le=\"+Inf\"} 4\n"));
  EXPECT_THAT(text, HasSubstr("gpuop_latency_seconds_sum{op=\"sync\"} 3.6499999999999999\n"));
  EXPECT_THAT(text, HasSubstr("gpuop_latency_seconds_count{op=\"sync\"} 4\n"));
}

TEST(RegistryTest, EscapesLabelValuesAndHelp) {
  Registry registry;
  registry.AddGauge("g", "line one\nback\\slash \"quoted\"", {"path"}).With({"a\"b\\c\nd"}).Set(1);
  EXPECT_EQ(registry.Render(),
            "# HELP g line one\\nback\\\\slash \"quoted\"\n"
            "# TYPE g gauge\n"
            "g{path=\"a\\\"b\\\\c\\nd\"} 1\n");
}

TEST(RegistryTest, CollectorsWriteAtRenderTime) {
  Registry registry;
  int calls = 0;
  registry.AddCollector([&calls](TextWriter& w) {
    w.Header("gpuop_computed", "Computed.", "gauge");
    w.Sample("gpuop_computed", {}, ++calls);
  });
  EXPECT_THAT(registry.Render(), HasSubstr("gpuop_computed 1\n"));
  EXPECT_THAT(registry.Render(), HasSubstr("gpuop_computed 2\n"));
}

TEST(RegistryTest, ConcurrentIncrementsAreAllCounted) {
  Registry registry;
  Counter& c = registry.AddCounter("c_total", "c").Get();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&c] {
      for (int i = 0; i < 10000; ++i) c.Inc();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.Value(), 40000);
}

TEST(RegistryTest, ValidatesNames) {
  EXPECT_TRUE(IsValidMetricName("gpuop_x:y_1"));
  EXPECT_FALSE(IsValidMetricName("1abc"));
  EXPECT_FALSE(IsValidMetricName("a-b"));
  EXPECT_FALSE(IsValidMetricName(""));
}

TEST(RegistryDeathTest, DuplicateNameCrashes) {
  Registry registry;
  registry.AddCounter("dup_total", "x");
  EXPECT_DEATH(registry.AddGauge("dup_total", "y"), "registered twice");
}

TEST(RegistryDeathTest, WrongLabelCountCrashes) {
  Registry registry;
  auto& family = registry.AddCounter("labelled_total", "x", {"a", "b"});
  EXPECT_DEATH(family.With({"only-one"}), "1 label values given for 2 label names");
}

}  // namespace
}  // namespace gpuop::metrics
