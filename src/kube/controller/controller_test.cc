#include "kube/controller/controller.h"

#include <array>
#include <atomic>
#include <deque>
#include <map>
#include <stdexcept>
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

// Bounds real-time waits for events that must happen; only reached when a test fails.
constexpr absl::Duration kEventTimeout = absl::Seconds(10);

// A reconciler that answers each key from a script, then with success, and counts calls.
class ScriptedReconciler {
 public:
  void Script(const std::string& key, std::vector<absl::StatusOr<Result>> answers) {
    absl::MutexLock lock(&mu_);
    answers_[key].assign(answers.begin(), answers.end());
  }

  absl::StatusOr<Result> operator()(const std::string& key) {
    absl::MutexLock lock(&mu_);
    ++calls_[key];
    ++total_;
    auto& answers = answers_[key];
    if (answers.empty()) return Result{};
    absl::StatusOr<Result> answer = std::move(answers.front());
    answers.pop_front();
    return answer;
  }

  // Waits until `total` reconciles have started.
  [[nodiscard]] bool AwaitTotal(int total) {
    absl::MutexLock lock(&mu_);
    auto reached = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return total_ >= total; };
    return mu_.AwaitWithTimeout(absl::Condition(&reached), kEventTimeout);
  }
  int Total() {
    absl::MutexLock lock(&mu_);
    return total_;
  }
  int Calls(const std::string& key) {
    absl::MutexLock lock(&mu_);
    return calls_[key];
  }

 private:
  absl::Mutex mu_;
  std::map<std::string, std::deque<absl::StatusOr<Result>>> answers_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> calls_ ABSL_GUARDED_BY(mu_);
  int total_ ABSL_GUARDED_BY(mu_) = 0;
};

// Controllers on a fake clock whose backoff is 1s, 2s, 4s, ... per key.
class ControllerTest : public ::testing::Test {
 protected:
  ControllerOptions Options(int workers = 1) {
    return {
        .name = "test",
        .workers = workers,
        .rate_limiter =
            std::make_unique<ItemExponentialRateLimiter>(absl::Seconds(1), absl::Minutes(1)),
        .clock = &clock_,
        .metrics = &metrics_,
    };
  }
  Reconciler Scripted() {
    return [this](const std::string& key) { return script_(key); };
  }
  // Blocks until every worker waits in the queue: nothing is ready to reconcile.
  void AwaitIdle(int workers = 1) { clock_.AwaitWaiters(workers); }

  common::FakeClock clock_;
  metrics::Registry registry_;
  ControllerMetrics metrics_{registry_};
  ScriptedReconciler script_;
};

TEST_F(ControllerTest, ReconcilesEachDistinctKeyOnceDespiteDuplicateEnqueues) {
  Controller controller(Options(/*workers=*/2), Scripted());
  for (const char* key : {"a", "a", "b", "a", "b"}) controller.Enqueue(key);
  ASSERT_TRUE(controller.Start().ok());
  ASSERT_TRUE(script_.AwaitTotal(2));
  AwaitIdle(2);
  controller.Stop();
  EXPECT_EQ(script_.Calls("a"), 1);
  EXPECT_EQ(script_.Calls("b"), 1);
  EXPECT_EQ(script_.Total(), 2);
}

TEST_F(ControllerTest, ErrorIsRetriedOnlyAfterTheBackoffHasPassed) {
  std::vector<absl::Status> errors;  // Written by the one worker, read once it is idle.
  ControllerOptions options = Options();
  options.on_error = [&errors](const std::string& key, const absl::Status& error) {
    EXPECT_EQ(key, "a");
    errors.push_back(error);
  };
  Controller controller(std::move(options), Scripted());
  script_.Script("a", {absl::UnavailableError("api down"), absl::UnavailableError("api down")});
  ASSERT_TRUE(controller.Start().ok());
  controller.Enqueue("a");

  ASSERT_TRUE(script_.AwaitTotal(1));
  AwaitIdle();
  clock_.Advance(absl::Seconds(1) - absl::Nanoseconds(1));
  EXPECT_EQ(script_.Total(), 1);
  clock_.Advance(absl::Nanoseconds(1));
  ASSERT_TRUE(script_.AwaitTotal(2));
  AwaitIdle();
  // The second failure doubles the backoff.
  clock_.Advance(absl::Seconds(2) - absl::Nanoseconds(1));
  EXPECT_EQ(script_.Total(), 2);
  clock_.Advance(absl::Nanoseconds(1));
  ASSERT_TRUE(script_.AwaitTotal(3));
  AwaitIdle();
  EXPECT_EQ(script_.Total(), 3);
  ASSERT_EQ(errors.size(), 2);
  EXPECT_EQ(errors[0], absl::UnavailableError("api down"));

  // Success forgot the failures: the next error backs off from 1s again, not 4s.
  script_.Script("a", {absl::UnavailableError("api down")});
  controller.Enqueue("a");
  ASSERT_TRUE(script_.AwaitTotal(4));
  AwaitIdle();
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(script_.AwaitTotal(5));
}

TEST_F(ControllerTest, InvalidArgumentIsTerminalAndNotRetried) {
  Controller controller(Options(), Scripted());
  script_.Script("bad-spec", {absl::InvalidArgumentError("spec.maxParallel: must be >= 0")});
  ASSERT_TRUE(controller.Start().ok());
  controller.Enqueue("bad-spec");
  ASSERT_TRUE(script_.AwaitTotal(1));
  AwaitIdle();
  clock_.Advance(absl::Hours(1));
  // A retry, had one been queued, would now be due and would run before this later key.
  controller.Enqueue("sentinel");
  ASSERT_TRUE(script_.AwaitTotal(2));
  AwaitIdle();
  EXPECT_EQ(script_.Calls("bad-spec"), 1);
  EXPECT_EQ(script_.Calls("sentinel"), 1);
  // The user's fix arrives as an event and is reconciled at once.
  controller.Enqueue("bad-spec");
  ASSERT_TRUE(script_.AwaitTotal(3));
  const std::string text = registry_.Render();
  EXPECT_THAT(text, HasSubstr("gpuop_controller_reconcile_errors_total{controller=\"test\"} 1"));
}

TEST_F(ControllerTest, RequeueAfterRunsAgainAfterTheDelayWithBackoffReset) {
  Controller controller(Options(), Scripted());
  script_.Script("a", {absl::UnavailableError("api down"), Result{.requeue_after = absl::Hours(1)},
                       absl::UnavailableError("api down")});
  controller.Enqueue("a");
  ASSERT_TRUE(controller.Start().ok());
  ASSERT_TRUE(script_.AwaitTotal(1));
  AwaitIdle();
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(script_.AwaitTotal(2));
  AwaitIdle();
  clock_.Advance(absl::Hours(1) - absl::Nanoseconds(1));
  EXPECT_EQ(script_.Total(), 2);
  clock_.Advance(absl::Nanoseconds(1));
  ASSERT_TRUE(script_.AwaitTotal(3));
  AwaitIdle();
  // The timed requeue reset the backoff: this error waits 1s, not 2s.
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(script_.AwaitTotal(4));
}

TEST_F(ControllerTest, RequeueBacksOffWithoutCountingAnError) {
  Controller controller(Options(), Scripted());
  script_.Script("a", {Result{.requeue = true}, Result{.requeue = true}});
  controller.Enqueue("a");
  ASSERT_TRUE(controller.Start().ok());
  ASSERT_TRUE(script_.AwaitTotal(1));
  AwaitIdle();
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(script_.AwaitTotal(2));
  AwaitIdle();
  clock_.Advance(absl::Seconds(2) - absl::Nanoseconds(1));
  EXPECT_EQ(script_.Total(), 2);
  clock_.Advance(absl::Nanoseconds(1));
  ASSERT_TRUE(script_.AwaitTotal(3));
  AwaitIdle();
  const std::string text = registry_.Render();
  EXPECT_THAT(
      text,
      HasSubstr("gpuop_controller_reconcile_total{controller=\"test\",result=\"requeue\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("gpuop_controller_reconcile_errors_total{controller=\"test\"} 0\n"));
}

TEST_F(ControllerTest, SameKeyIsNeverReconciledConcurrently) {
  constexpr int kKeys = 6;
  constexpr int kEnqueuesPerKey = 300;
  std::array<std::atomic<bool>, kKeys> in_progress{};
  std::atomic<int> overlaps{0};
  absl::Mutex mu;
  // Versions: bumped before each Enqueue; a reconcile records the version current when it starts.
  std::array<int, kKeys> enqueued{};
  std::array<int, kKeys> seen{};
  Controller controller(Options(/*workers=*/4),
                        [&](const std::string& key) -> absl::StatusOr<Result> {
                          const int k = std::stoi(key);
                          if (in_progress[k].exchange(true)) ++overlaps;
                          {
                            absl::MutexLock lock(&mu);
                            seen[k] = enqueued[k];
                          }
                          std::this_thread::yield();
                          in_progress[k] = false;
                          return Result{};
                        });
  ASSERT_TRUE(controller.Start().ok());
  for (int i = 0; i < kEnqueuesPerKey; ++i) {
    for (int k = 0; k < kKeys; ++k) {
      {
        absl::MutexLock lock(&mu);
        ++enqueued[k];
      }
      controller.Enqueue(std::to_string(k));
    }
  }
  {
    // Every key's last enqueue must lead to a reconcile that started after it.
    absl::MutexLock lock(&mu);
    auto caught_up = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return seen == enqueued; };
    EXPECT_TRUE(mu.AwaitWithTimeout(absl::Condition(&caught_up), kEventTimeout));
  }
  controller.Stop();
  EXPECT_EQ(overlaps, 0);
}

TEST_F(ControllerTest, StopWaitsForTheReconcileInFlightAndTakesNoMoreKeys) {
  absl::Mutex mu;
  bool entered = false;
  bool release = false;
  std::atomic<bool> finished{false};
  Controller controller(Options(), [&](const std::string& key) -> absl::StatusOr<Result> {
    (void)script_(key);
    absl::MutexLock lock(&mu);
    entered = true;
    EXPECT_TRUE(mu.AwaitWithTimeout(absl::Condition(&release), kEventTimeout));
    finished = true;
    return Result{};
  });
  controller.Enqueue("slow");
  ASSERT_TRUE(controller.Start().ok());
  {
    absl::MutexLock lock(&mu);
    ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&entered), kEventTimeout));
  }
  controller.Enqueue("queued");
  EXPECT_THAT(registry_.Render(),
              HasSubstr("gpuop_controller_active_workers{controller=\"test\"} 1\n"));

  std::atomic<bool> stop_returned{false};
  bool finished_when_stop_returned = false;
  std::thread stopper([&] {
    controller.Stop();
    finished_when_stop_returned = finished;
    stop_returned = true;
  });
  // The one worker is held in the reconciler, so the clock's waiter is Stop() draining.
  clock_.AwaitWaiters(1);
  EXPECT_FALSE(stop_returned);
  {
    absl::MutexLock lock(&mu);
    release = true;
  }
  // No clock advance: Stop() must not depend on a timer to return.
  stopper.join();
  EXPECT_TRUE(finished_when_stop_returned);
  EXPECT_EQ(script_.Calls("queued"), 0);
  EXPECT_THAT(registry_.Render(),
              HasSubstr("gpuop_controller_active_workers{controller=\"test\"} 0\n"));

  controller.Enqueue("late");
  controller.Stop();
  EXPECT_EQ(script_.Total(), 1);
  EXPECT_EQ(controller.Start().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(ControllerTest, StartRejectsBadOptionsAndASecondStart) {
  EXPECT_EQ(Controller({.name = "", .clock = &clock_}, Scripted()).Start().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Controller({.name = "x", .workers = 0, .clock = &clock_}, Scripted()).Start().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Controller({.name = "x", .clock = &clock_}, nullptr).Start().code(),
            absl::StatusCode::kInvalidArgument);

  Controller controller(Options(), Scripted());
  controller.Stop();  // Before Start(): allowed, and final.
  EXPECT_EQ(controller.Start().code(), absl::StatusCode::kFailedPrecondition);

  Controller running(Options(), Scripted());
  ASSERT_TRUE(running.Start().ok());
  EXPECT_EQ(running.Start().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(ControllerTest, DestructorStopsRunningWorkers) {
  {
    Controller controller(Options(/*workers=*/3), Scripted());
    ASSERT_TRUE(controller.Start().ok());
    controller.Enqueue("a");
    ASSERT_TRUE(script_.AwaitTotal(1));
  }
  EXPECT_EQ(clock_.waiters(), 0);
}

TEST_F(ControllerTest, ReportsReconcileAndQueueMetrics) {
  Controller controller(Options(), [this](const std::string& key) {
    // Reconcile time is measured on the controller's clock.
    if (key == "ok") clock_.Advance(absl::Milliseconds(500));
    return script_(key);
  });
  script_.Script("bad", {absl::UnavailableError("down"), absl::UnavailableError("down")});
  script_.Script("later", {Result{.requeue_after = absl::Hours(1)}});
  script_.Script("again", {Result{.requeue = true}});
  for (const char* key : {"ok", "bad", "later", "again"}) controller.Enqueue(key);
  ASSERT_TRUE(controller.Start().ok());
  ASSERT_TRUE(script_.AwaitTotal(4));
  AwaitIdle();
  // "bad" and "again" are due after their 1s backoff; "again" then succeeds, "bad" fails again.
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(script_.AwaitTotal(6));
  AwaitIdle();

  const std::string text = registry_.Render();
  const std::string total = "gpuop_controller_reconcile_total{controller=\"test\",result=";
  EXPECT_THAT(text, HasSubstr(total + "\"success\"} 2\n"));
  EXPECT_THAT(text, HasSubstr(total + "\"error\"} 2\n"));
  EXPECT_THAT(text, HasSubstr(total + "\"requeue\"} 1\n"));
  EXPECT_THAT(text, HasSubstr(total + "\"requeue_after\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("gpuop_controller_reconcile_errors_total{controller=\"test\"} 2\n"));
  EXPECT_THAT(text,
              HasSubstr("gpuop_controller_reconcile_time_seconds_count{controller=\"test\"} 6\n"));
  EXPECT_THAT(text,
              HasSubstr("gpuop_controller_reconcile_time_seconds_sum{controller=\"test\"} 0.5\n"));
  EXPECT_THAT(text, HasSubstr("gpuop_controller_active_workers{controller=\"test\"} 0\n"));
  EXPECT_THAT(text,
              HasSubstr("gpuop_controller_max_concurrent_reconciles{controller=\"test\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("gpuop_workqueue_depth{name=\"test\"} 0\n"));
  // ok, bad, later, again, then bad and again once more after their backoff.
  EXPECT_THAT(text, HasSubstr("gpuop_workqueue_adds_total{name=\"test\"} 6\n"));
  // Delayed re-adds: bad twice, again once, later once.
  EXPECT_THAT(text, HasSubstr("gpuop_workqueue_retries_total{name=\"test\"} 4\n"));
  EXPECT_THAT(text, HasSubstr("gpuop_workqueue_work_duration_seconds_count{name=\"test\"} 6\n"));
}

TEST_F(ControllerTest, ExceptionBecomesAnErrorRetriedWithBackoffAndCounted) {
  std::vector<std::pair<std::string, std::string>> panics;  // Written by the one worker.
  std::vector<absl::Status> errors;
  ControllerOptions options = Options();
  options.on_panic = [&panics](const std::string& key, const std::string& what) {
    panics.emplace_back(key, what);
  };
  options.on_error = [&errors](const std::string&, const absl::Status& error) {
    errors.push_back(error);
  };
  // The script counts every call; the first two throw.
  Controller controller(std::move(options), [&](const std::string& key) -> absl::StatusOr<Result> {
    absl::StatusOr<Result> answer = script_(key);
    const int calls = script_.Calls(key);
    if (calls == 1) throw std::runtime_error("type must be string, but is number");
    if (calls == 2) throw 42;  // not a std::exception
    return answer;
  });
  ASSERT_TRUE(controller.Start().ok());
  controller.Enqueue("node-a");
  ASSERT_TRUE(script_.AwaitTotal(1));
  AwaitIdle();
  clock_.Advance(absl::Seconds(1) - absl::Nanoseconds(1));
  EXPECT_EQ(script_.Total(), 1);
  clock_.Advance(absl::Nanoseconds(1));  // the first backoff
  ASSERT_TRUE(script_.AwaitTotal(2));
  AwaitIdle();
  clock_.Advance(absl::Seconds(2) - absl::Nanoseconds(1));  // the second is doubled
  EXPECT_EQ(script_.Total(), 2);
  clock_.Advance(absl::Nanoseconds(1));
  ASSERT_TRUE(script_.AwaitTotal(3));
  AwaitIdle();
  controller.Stop();

  EXPECT_EQ(script_.Total(), 3);
  ASSERT_EQ(panics.size(), 2);
  EXPECT_EQ(panics[0].first, "node-a");
  EXPECT_EQ(panics[0].second, "type must be string, but is number");
  EXPECT_EQ(panics[1].first, "node-a");
  ASSERT_EQ(errors.size(), 2);
  EXPECT_EQ(errors[0].code(), absl::StatusCode::kInternal);
  EXPECT_THAT(errors[0].message(), HasSubstr("reconcile node-a: threw: type must be string"));
  const std::string text = registry_.Render();
  EXPECT_THAT(text, HasSubstr("gpuop_controller_reconcile_panics_total{controller=\"test\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("gpuop_controller_reconcile_errors_total{controller=\"test\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("gpuop_controller_reconcile_total{controller=\"test\",result="
                              "\"success\"} 1\n"));
}

TEST_F(ControllerTest, RunsWithoutMetrics) {
  Controller controller({.name = "plain", .clock = &clock_}, Scripted());
  ASSERT_TRUE(controller.Start().ok());
  controller.Enqueue("a");
  ASSERT_TRUE(script_.AwaitTotal(1));
  controller.Stop();
  EXPECT_THAT(registry_.Render(), ::testing::Not(HasSubstr("plain")));
}

}  // namespace
}  // namespace gpuop::kube
