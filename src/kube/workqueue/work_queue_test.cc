#include "kube/workqueue/work_queue.h"

#include <array>
#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/fake_clock.h"
#include "metrics/registry.h"

namespace gpuop::kube {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;

// A queue on a fake clock whose rate limiter backs off 1s, 2s, 4s, ...
class WorkQueueTest : public ::testing::Test {
 protected:
  WorkQueue MakeQueue(WorkQueueMetrics* metrics = nullptr) {
    return WorkQueue({
        .name = "test",
        .clock = &clock_,
        .rate_limiter =
            std::make_unique<ItemExponentialRateLimiter>(absl::Seconds(1), absl::Minutes(1)),
        .metrics = metrics,
    });
  }

  common::FakeClock clock_;
};

TEST_F(WorkQueueTest, HandsOutEachQueuedItemOnceInOrder) {
  WorkQueue queue = MakeQueue();
  queue.Add("a");
  queue.Add("b");
  queue.Add("a");
  queue.Add("a");
  EXPECT_EQ(queue.Len(), 2);
  EXPECT_THAT(queue.Get(), Optional(std::string("a")));
  EXPECT_THAT(queue.Get(), Optional(std::string("b")));
  EXPECT_EQ(queue.Len(), 0);
}

TEST_F(WorkQueueTest, ItemAddedWhileProcessingIsQueuedAgainOnDone) {
  WorkQueue queue = MakeQueue();
  queue.Add("a");
  ASSERT_THAT(queue.Get(), Optional(std::string("a")));
  queue.Add("a");
  queue.Add("a");
  // Not handed to a second worker while the first holds it.
  EXPECT_EQ(queue.Len(), 0);
  queue.Done("a");
  ASSERT_EQ(queue.Len(), 1);
  EXPECT_THAT(queue.Get(), Optional(std::string("a")));
  queue.Done("a");
  EXPECT_EQ(queue.Len(), 0);
}

TEST_F(WorkQueueTest, DoneForAnItemNotProcessingIsIgnored) {
  WorkQueue queue = MakeQueue();
  queue.Add("a");
  queue.Done("a");
  queue.Done("b");
  ASSERT_EQ(queue.Len(), 1);
  EXPECT_THAT(queue.Get(), Optional(std::string("a")));
  EXPECT_EQ(queue.Len(), 0);
}

TEST_F(WorkQueueTest, SameItemIsNeverProcessedConcurrentlyAndLastAddIsSeen) {
  WorkQueue queue = MakeQueue();
  constexpr int kKeys = 5;
  constexpr int kWorkers = 4;
  constexpr int kAddsPerKey = 400;
  std::array<std::atomic<bool>, kKeys> in_progress{};
  std::atomic<int> overlaps{0};
  absl::Mutex mu;
  // Versions: bumped before each Add; a run records the version current when it starts.
  std::array<int, kKeys> added{};
  std::array<int, kKeys> seen{};

  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&] {
      while (std::optional<std::string> item = queue.Get()) {
        const int key = std::stoi(*item);
        if (in_progress[key].exchange(true)) ++overlaps;
        {
          absl::MutexLock lock(&mu);
          seen[key] = added[key];
        }
        // Widen the window in which a second worker could wrongly take the same key.
        for (int i = 0; i < 10; ++i) std::this_thread::yield();
        in_progress[key] = false;
        queue.Done(*item);
      }
    });
  }
  for (int i = 0; i < kAddsPerKey; ++i) {
    for (int key = 0; key < kKeys; ++key) {
      {
        absl::MutexLock lock(&mu);
        ++added[key];
      }
      queue.Add(std::to_string(key));
    }
  }
  {
    // Every key's final add must lead to a run that started after it. A lost add would hang
    // here, so bound the wait (in real time; this is a liveness check, not a timing one).
    absl::MutexLock lock(&mu);
    auto caught_up = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return seen == added; };
    EXPECT_TRUE(mu.AwaitWithTimeout(absl::Condition(&caught_up), absl::Seconds(30)));
  }
  queue.ShutDown();
  for (auto& worker : workers) worker.join();
  EXPECT_EQ(overlaps, 0);
}

TEST_F(WorkQueueTest, AddAfterBecomesReadyWhenTheClockReachesTheDelay) {
  WorkQueue queue = MakeQueue();
  queue.AddAfter("a", absl::Seconds(10));
  EXPECT_EQ(queue.Len(), 0);
  clock_.Advance(absl::Seconds(10) - absl::Nanoseconds(1));
  EXPECT_EQ(queue.Len(), 0);
  clock_.Advance(absl::Nanoseconds(1));
  ASSERT_EQ(queue.Len(), 1);
  EXPECT_THAT(queue.Get(), Optional(std::string("a")));
}

TEST_F(WorkQueueTest, BlockedGetWakesWhenFakeTimeReachesADelayedItem) {
  WorkQueue queue = MakeQueue();
  queue.AddAfter("a", absl::Minutes(5));
  std::optional<std::string> got;
  std::thread worker([&] { got = queue.Get(); });
  clock_.AwaitWaiters(1);
  // A new, earlier item must shorten the blocked Get's wait.
  queue.AddAfter("b", absl::Minutes(1));
  clock_.Advance(absl::Minutes(1));
  worker.join();
  EXPECT_THAT(got, Optional(std::string("b")));
}

TEST_F(WorkQueueTest, AddAfterKeepsTheEarlierReadyTime) {
  WorkQueue queue = MakeQueue();
  queue.AddAfter("a", absl::Seconds(10));
  queue.AddAfter("a", absl::Seconds(5));
  queue.AddAfter("a", absl::Seconds(20));
  clock_.Advance(absl::Seconds(5));
  ASSERT_EQ(queue.Len(), 1);
  ASSERT_THAT(queue.Get(), Optional(std::string("a")));
  queue.Done("a");
  // The later requests were folded into the first; nothing else is waiting.
  clock_.Advance(absl::Hours(1));
  EXPECT_EQ(queue.Len(), 0);
}

TEST_F(WorkQueueTest, AddAfterWithoutDelayAddsAtOnce) {
  WorkQueue queue = MakeQueue();
  queue.AddAfter("a", absl::ZeroDuration());
  queue.AddAfter("b", -absl::Seconds(1));
  EXPECT_EQ(queue.Len(), 2);
}

TEST_F(WorkQueueTest, DelayedAddOfAProcessingItemMarksItDirty) {
  WorkQueue queue = MakeQueue();
  queue.Add("a");
  ASSERT_THAT(queue.Get(), Optional(std::string("a")));
  queue.AddAfter("a", absl::Seconds(1));
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(queue.Len(), 0);
  queue.Done("a");
  EXPECT_EQ(queue.Len(), 1);
}

TEST_F(WorkQueueTest, AddRateLimitedBacksOffUntilForgotten) {
  WorkQueue queue = MakeQueue();
  queue.AddRateLimited("a");
  EXPECT_EQ(queue.NumRequeues("a"), 1);
  EXPECT_EQ(queue.Len(), 0);
  clock_.Advance(absl::Seconds(1));
  ASSERT_EQ(queue.Len(), 1);
  ASSERT_THAT(queue.Get(), Optional(std::string("a")));
  queue.AddRateLimited("a");
  queue.Done("a");
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(queue.Len(), 0);  // Second failure: 2s.
  clock_.Advance(absl::Seconds(1));
  ASSERT_EQ(queue.Len(), 1);
  ASSERT_THAT(queue.Get(), Optional(std::string("a")));
  queue.Done("a");
  EXPECT_EQ(queue.NumRequeues("a"), 2);
  queue.Forget("a");
  EXPECT_EQ(queue.NumRequeues("a"), 0);
  queue.AddRateLimited("a");
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(queue.Len(), 1);
}

TEST_F(WorkQueueTest, ShutDownWakesEveryBlockedGet) {
  WorkQueue queue = MakeQueue();
  std::array<std::optional<std::string>, 2> got = {"unset", "unset"};
  std::thread first([&] { got[0] = queue.Get(); });
  std::thread second([&] { got[1] = queue.Get(); });
  clock_.AwaitWaiters(2);
  EXPECT_FALSE(queue.ShuttingDown());
  queue.ShutDown();
  first.join();
  second.join();
  EXPECT_EQ(got[0], std::nullopt);
  EXPECT_EQ(got[1], std::nullopt);
  EXPECT_TRUE(queue.ShuttingDown());
}

TEST_F(WorkQueueTest, AfterShutDownAddsAreIgnoredAndGetReturnsAtOnce) {
  WorkQueue queue = MakeQueue();
  queue.Add("queued");
  queue.ShutDown();
  queue.Add("a");
  queue.AddAfter("b", absl::Seconds(1));
  queue.AddRateLimited("c");
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(queue.Len(), 1);
  EXPECT_EQ(queue.Get(), std::nullopt);
  EXPECT_EQ(queue.NumRequeues("c"), 0);
}

TEST_F(WorkQueueTest, ShutDownWithDrainWaitsForItemsBeingProcessed) {
  WorkQueue queue = MakeQueue();
  queue.Add("a");
  queue.Add("b");
  ASSERT_THAT(queue.Get(), Optional(std::string("a")));
  std::atomic<bool> done_called{false};
  std::atomic<bool> returned{false};
  bool returned_after_done = false;
  std::thread drainer([&] {
    queue.ShutDownWithDrain();
    returned_after_done = done_called.load();
    returned = true;
  });
  clock_.AwaitWaiters(1);  // The drainer is blocked on "a".
  EXPECT_FALSE(returned);
  EXPECT_EQ(queue.Get(), std::nullopt);  // "b" is not handed out any more.
  done_called = true;
  queue.Done("a");
  drainer.join();
  EXPECT_TRUE(returned_after_done);
}

TEST_F(WorkQueueTest, ShutDownWithDrainReturnsAtOnceWhenNothingIsProcessing) {
  WorkQueue queue = MakeQueue();
  queue.Add("a");
  queue.ShutDownWithDrain();
  EXPECT_TRUE(queue.ShuttingDown());
}

TEST_F(WorkQueueTest, ShutDownEndsAWaitingDrain) {
  WorkQueue queue = MakeQueue();
  queue.Add("a");
  ASSERT_THAT(queue.Get(), Optional(std::string("a")));
  std::thread drainer([&] { queue.ShutDownWithDrain(); });
  clock_.AwaitWaiters(1);
  queue.ShutDown();
  drainer.join();
  queue.Done("a");  // Still allowed after shutdown.
}

TEST_F(WorkQueueTest, ReportsMetrics) {
  metrics::Registry registry;
  WorkQueueMetrics queue_metrics(registry);
  WorkQueue queue = MakeQueue(&queue_metrics);
  queue.Add("a");
  queue.Add("a");
  queue.Add("b");
  queue.AddRateLimited("c");
  queue.AddAfter("d", absl::Hours(1));
  clock_.Advance(absl::Seconds(3));
  ASSERT_THAT(queue.Get(), Optional(std::string("a")));
  clock_.Advance(absl::Seconds(2));
  queue.Done("a");

  const std::string text = registry.Render();
  EXPECT_THAT(text, HasSubstr("gpuop_workqueue_depth{name=\"test\"} 2\n"));  // b and c
  EXPECT_THAT(text, HasSubstr("gpuop_workqueue_adds_total{name=\"test\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("gpuop_workqueue_retries_total{name=\"test\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("gpuop_workqueue_queue_duration_seconds_sum{name=\"test\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("gpuop_workqueue_queue_duration_seconds_count{name=\"test\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("gpuop_workqueue_work_duration_seconds_sum{name=\"test\"} 2\n"));
}

TEST_F(WorkQueueTest, QueuesShareOneSetOfMetricFamilies) {
  metrics::Registry registry;
  WorkQueueMetrics queue_metrics(registry);
  WorkQueue first({.name = "first", .clock = &clock_, .metrics = &queue_metrics});
  WorkQueue second({.name = "second", .clock = &clock_, .metrics = &queue_metrics});
  first.Add("a");
  second.Add("a");
  second.Add("b");
  const std::string text = registry.Render();
  EXPECT_THAT(text, HasSubstr("gpuop_workqueue_adds_total{name=\"first\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("gpuop_workqueue_adds_total{name=\"second\"} 2\n"));
}

}  // namespace
}  // namespace gpuop::kube
