#include "kube/leaderelection/leader_elector.h"

#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/synchronization/notification.h"
#include "common/fake_clock.h"
#include "kube/leaderelection/fake_lease_store.h"

namespace gpuop::kube {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kNamespace[] = "gpuop-system";
constexpr char kName[] = "gpuop-operator";
// Only bounds how long a broken test hangs; never reached by a passing one.
constexpr absl::Duration kWait = absl::Seconds(30);

void WaitForStop(std::stop_token stop) {
  absl::Notification stopped;
  std::stop_callback on_stop(stop, [&] { stopped.Notify(); });
  stopped.WaitForNotification();
}

// A candidate running LeaderElector::Run in a thread of its own, recording its callbacks. Its
// work runs until its stop token is requested.
class Candidate {
 public:
  Candidate(LeaseStore& store, LeaderElectorConfig config) {
    auto elector = LeaderElector::Create(store, std::move(config),
                                         {.on_started_leading =
                                              [this](std::stop_token stop) {
                                                {
                                                  absl::MutexLock lock(&mu_);
                                                  work_token_ = stop;
                                                  ++started_;
                                                }
                                                WaitForStop(stop);
                                              },
                                          .on_stopped_leading =
                                              [this] {
                                                absl::MutexLock lock(&mu_);
                                                work_stopped_first_ = work_token_.stop_requested();
                                                ++stopped_;
                                              },
                                          .on_new_leader =
                                              [this](const std::string& identity) {
                                                absl::MutexLock lock(&mu_);
                                                leaders_.push_back(identity);
                                              }});
    EXPECT_TRUE(elector.ok()) << elector.status();
    elector_ = *std::move(elector);
  }

  // Starts Run(); again after Join() for another campaign.
  void Start() {
    thread_ = std::jthread([this](std::stop_token stop) {
      absl::Status result = elector_->Run(stop);
      absl::MutexLock lock(&mu_);
      result_ = std::move(result);
      returned_ = true;
    });
  }
  // Requests Run's stop and waits for it to return.
  absl::Status Stop() {
    thread_.request_stop();
    return Join();
  }
  absl::Status Join() {
    thread_.join();
    absl::MutexLock lock(&mu_);
    returned_ = false;
    return result_;
  }

  LeaderElector& elector() { return *elector_; }
  // Wait until on_started_leading / on_stopped_leading ran `terms` times in all.
  bool AwaitStarted(int terms = 1) { return AwaitCount(&started_, terms); }
  bool AwaitStopped(int terms = 1) { return AwaitCount(&stopped_, terms); }
  int started() { return Read(&started_); }
  int stopped() { return Read(&stopped_); }
  bool returned() {
    absl::MutexLock lock(&mu_);
    return returned_;
  }
  // Whether the work's stop token was requested when on_stopped_leading last ran.
  bool WorkStoppedFirst() {
    absl::MutexLock lock(&mu_);
    return work_stopped_first_;
  }
  std::vector<std::string> Leaders() {
    absl::MutexLock lock(&mu_);
    return leaders_;
  }

 private:
  bool AwaitCount(const int* count, int want) {
    absl::MutexLock lock(&mu_);
    auto reached = [count, want]() { return *count >= want; };
    return mu_.AwaitWithTimeout(absl::Condition(&reached), kWait);
  }
  int Read(const int* count) {
    absl::MutexLock lock(&mu_);
    return *count;
  }

  std::unique_ptr<LeaderElector> elector_;
  absl::Mutex mu_;
  std::stop_token work_token_ ABSL_GUARDED_BY(mu_);
  bool work_stopped_first_ ABSL_GUARDED_BY(mu_) = false;
  int started_ ABSL_GUARDED_BY(mu_) = 0;
  int stopped_ ABSL_GUARDED_BY(mu_) = 0;
  bool returned_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status result_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> leaders_ ABSL_GUARDED_BY(mu_);
  std::jthread thread_;
};

class LeaderElectorTest : public ::testing::Test {
 protected:
  LeaderElectorConfig Config(const std::string& identity) {
    return {.lease_namespace = kNamespace,
            .lease_name = kName,
            .identity = identity,
            .clock = &clock_,
            .metrics = &metrics_};
  }
  // A Lease written by another candidate.
  Lease OtherLease(const std::string& holder, absl::Time renew_time, int transitions = 3) {
    Lease lease;
    lease.metadata.name = kName;
    lease.metadata.namespace_ = kNamespace;
    lease.holder_identity = holder;
    lease.lease_duration_seconds = 15;
    lease.acquire_time = renew_time;
    lease.renew_time = renew_time;
    lease.lease_transitions = transitions;
    return lease;
  }
  Lease Stored() {
    std::optional<Lease> lease = store_.Peek(kNamespace, kName);
    EXPECT_TRUE(lease.has_value());
    return lease.value_or(Lease{});
  }
  // Waits until `attempts` reads of the Lease have happened and the elector's `threads` are
  // parked on the clock, then moves it.
  void AdvanceAfter(int attempts, int threads, absl::Duration by) {
    ASSERT_TRUE(store_.AwaitGets(attempts));
    clock_.AwaitWaiters(threads);
    clock_.Advance(by);
  }
  double IsLeaderMetric() { return metrics_.is_leader.With({kName}).Value(); }
  double ErrorsMetric() { return metrics_.errors.With({kName}).Value(); }

  common::FakeClock clock_;
  FakeLeaseStore store_;
  metrics::Registry registry_;
  LeaderElectionMetrics metrics_{registry_};
};

TEST_F(LeaderElectorTest, CreatesAbsentLeaseLeadsAndReleasesOnStop) {
  const absl::Time t0 = clock_.Now();
  Candidate a(store_, Config("a"));
  a.Start();
  ASSERT_TRUE(a.AwaitStarted());
  EXPECT_TRUE(a.elector().IsLeader());
  EXPECT_EQ(a.elector().GetLeader(), "a");
  EXPECT_EQ(IsLeaderMetric(), 1);
  Lease lease = Stored();
  EXPECT_EQ(lease.holder_identity, "a");
  EXPECT_EQ(lease.lease_duration_seconds, 15);
  EXPECT_EQ(lease.lease_transitions, 0);
  EXPECT_EQ(lease.acquire_time, t0);

  EXPECT_TRUE(a.Stop().ok());
  EXPECT_EQ(a.stopped(), 1);
  EXPECT_TRUE(a.WorkStoppedFirst());
  EXPECT_FALSE(a.elector().IsLeader());
  EXPECT_EQ(IsLeaderMetric(), 0);
  lease = Stored();
  EXPECT_EQ(lease.holder_identity, "");
  EXPECT_EQ(lease.lease_duration_seconds, 1);
  EXPECT_EQ(lease.lease_transitions, 0);
  EXPECT_THAT(a.Leaders(), ElementsAre("a", ""));
}

TEST_F(LeaderElectorTest, KeepsLeaseOnStopWithoutReleaseOnCancel) {
  LeaderElectorConfig config = Config("a");
  config.release_on_cancel = false;
  Candidate a(store_, config);
  a.Start();
  ASSERT_TRUE(a.AwaitStarted());
  EXPECT_TRUE(a.Stop().ok());
  EXPECT_EQ(a.stopped(), 1);
  EXPECT_EQ(Stored().holder_identity, "a");
  EXPECT_EQ(Stored().lease_duration_seconds, 15);
}

TEST_F(LeaderElectorTest, RenewedLeaseOfAnotherIsNeverTakenOver) {
  // The holder's renewTime is an hour old by our clock: remote timestamps are not trusted, only
  // whether the record keeps changing.
  store_.Put(OtherLease("b", clock_.Now() - absl::Hours(1)));
  Candidate a(store_, Config("a"));
  a.Start();
  for (int attempt = 1; attempt <= 12; ++attempt) {  // 24s, longer than the lease's 15s
    ASSERT_TRUE(store_.AwaitGets(attempt));
    clock_.AwaitWaiters(1);
    store_.Put(OtherLease("b", clock_.Now() - absl::Hours(1)));  // b renews
    clock_.Advance(absl::Seconds(2));
  }
  ASSERT_TRUE(store_.AwaitGets(13));
  clock_.AwaitWaiters(1);
  EXPECT_EQ(a.started(), 0);
  EXPECT_FALSE(a.elector().IsLeader());
  EXPECT_EQ(a.elector().GetLeader(), "b");
  EXPECT_EQ(Stored().holder_identity, "b");
  EXPECT_TRUE(a.Stop().ok());
  EXPECT_EQ(a.started(), 0);
  EXPECT_THAT(a.Leaders(), ElementsAre("b"));
}

TEST_F(LeaderElectorTest, TakesOverLeaseUnchangedForItsDurationOnOwnClock) {
  const absl::Time t0 = clock_.Now();
  // A renewTime an hour ahead (a skewed remote clock) does not delay the takeover either.
  store_.Put(OtherLease("b", t0 + absl::Hours(1)));
  Candidate a(store_, Config("a"));
  a.Start();
  // Attempts at t0, t0+2s, ..., t0+14s: unchanged for less than 15s since first seen at t0.
  for (int attempt = 1; attempt <= 8; ++attempt) {
    AdvanceAfter(attempt, 1, absl::Seconds(2));
    EXPECT_EQ(a.started(), 0);
  }
  // At t0+16s it has expired.
  ASSERT_TRUE(a.AwaitStarted());
  const Lease lease = Stored();
  EXPECT_EQ(lease.holder_identity, "a");
  EXPECT_EQ(lease.lease_transitions, 4);
  EXPECT_EQ(lease.acquire_time, t0 + absl::Seconds(16));
  EXPECT_EQ(lease.lease_duration_seconds, 15);
  EXPECT_TRUE(a.Stop().ok());
}

TEST_F(LeaderElectorTest, LeaderStopsAtRenewDeadlineWhenRenewalsFail) {
  Candidate a(store_, Config("a"));
  a.Start();
  ASSERT_TRUE(a.AwaitStarted());
  store_.SetFailure(absl::UnavailableError("connection refused"));
  // The last success started at t0; renewals at t0+2s..t0+8s fail; the deadline is t0+10s.
  // Two threads wait on the clock while leading: Run's and the renewer.
  for (int attempt = 1; attempt <= 4; ++attempt) {
    AdvanceAfter(attempt, 2, absl::Seconds(2));
    ASSERT_TRUE(store_.AwaitGets(attempt + 1));
    EXPECT_TRUE(a.elector().IsLeader()) << "attempt " << attempt;
  }
  AdvanceAfter(5, 2, absl::Seconds(2));
  ASSERT_TRUE(a.AwaitStopped());
  EXPECT_TRUE(a.WorkStoppedFirst());
  EXPECT_FALSE(a.elector().IsLeader());
  EXPECT_EQ(IsLeaderMetric(), 0);
  EXPECT_GE(ErrorsMetric(), 4);
  const absl::Status result = a.Join();
  EXPECT_EQ(result.code(), absl::StatusCode::kUnavailable) << result;
  EXPECT_THAT(result.message(), HasSubstr("gpuop-system/gpuop-operator"));
  // Not released: the store was unreachable, and the holder is left for others to expire.
  EXPECT_EQ(Stored().holder_identity, "a");
}

TEST_F(LeaderElectorTest, LeaderStopsAtRenewDeadlineWhileARenewalHangs) {
  Candidate a(store_, Config("a"));
  a.Start();
  ASSERT_TRUE(a.AwaitStarted());
  store_.Block();
  AdvanceAfter(1, 2, absl::Seconds(2));
  ASSERT_TRUE(store_.AwaitGets(2));  // the renewer is now stuck in Get()
  clock_.AwaitWaiters(1);
  clock_.Advance(absl::Seconds(8));
  ASSERT_TRUE(a.AwaitStopped());
  EXPECT_TRUE(a.WorkStoppedFirst());
  EXPECT_FALSE(a.elector().IsLeader());
  // Run waits for the stuck renewal before it returns.
  EXPECT_FALSE(a.returned());
  store_.Unblock();
  EXPECT_EQ(a.Join().code(), absl::StatusCode::kUnavailable);
}

TEST_F(LeaderElectorTest, LeaderStopsAtOnceWhenAnotherHolderTakesTheLease) {
  Candidate a(store_, Config("a"));
  a.Start();
  ASSERT_TRUE(a.AwaitStarted());
  store_.Put(OtherLease("b", clock_.Now()));
  AdvanceAfter(1, 2, absl::Seconds(2));
  ASSERT_TRUE(a.AwaitStopped());
  EXPECT_TRUE(a.WorkStoppedFirst());
  const absl::Status result = a.Join();
  EXPECT_EQ(result.code(), absl::StatusCode::kAborted) << result;
  EXPECT_THAT(result.message(), HasSubstr("\"b\""));
  EXPECT_EQ(a.elector().GetLeader(), "b");
  EXPECT_EQ(Stored().holder_identity, "b");  // not "released" from under b
}

TEST_F(LeaderElectorTest, ConflictOnAcquireRereadsAndRespectsTheWinner) {
  const absl::Time t0 = clock_.Now();
  Lease released = OtherLease("", t0, 5);
  released.lease_duration_seconds = 1;
  store_.Put(released);
  // b's write lands between a's read and a's write.
  store_.RaceNextUpdate(OtherLease("b", t0, 6));
  Candidate a(store_, Config("a"));
  a.Start();
  AdvanceAfter(1, 1, absl::Seconds(2));
  // a re-read at t0+2s and saw b's Lease, live until t0+17s: attempts up to t0+16s wait.
  for (int attempt = 2; attempt <= 9; ++attempt) {
    AdvanceAfter(attempt, 1, absl::Seconds(2));
    EXPECT_EQ(a.started(), 0) << "attempt " << attempt;
    EXPECT_EQ(a.elector().GetLeader(), "b");
  }
  ASSERT_TRUE(a.AwaitStarted());
  EXPECT_EQ(Stored().holder_identity, "a");
  EXPECT_EQ(Stored().lease_transitions, 7);
  EXPECT_EQ(Stored().acquire_time, t0 + absl::Seconds(18));
  EXPECT_TRUE(a.Stop().ok());
}

TEST_F(LeaderElectorTest, ConflictOnRenewRereadsAndKeepsLeading) {
  Candidate a(store_, Config("a"));
  a.Start();
  ASSERT_TRUE(a.AwaitStarted());
  // Someone else writes the Lease (annotates it) just before the renewal at t0+2s.
  Lease annotated = Stored();
  annotated.metadata.annotations =
      Labels(std::map<std::string, std::string>{{"example.com/touched", "yes"}});
  store_.RaceNextUpdate(annotated);
  // t0+2s conflicts, t0+4s renews: the deadline moves to t0+14s, past t0+10s.
  for (int attempt = 1; attempt <= 6; ++attempt) AdvanceAfter(attempt, 2, absl::Seconds(2));
  ASSERT_TRUE(store_.AwaitGets(7));
  clock_.AwaitWaiters(2);
  EXPECT_TRUE(a.elector().IsLeader());
  EXPECT_EQ(a.stopped(), 0);
  const Lease lease = Stored();
  EXPECT_EQ(lease.holder_identity, "a");
  EXPECT_EQ(lease.renew_time, clock_.Now());
  EXPECT_EQ(lease.metadata.annotations.Get("example.com/touched"), "yes");
  EXPECT_TRUE(a.Stop().ok());
}

TEST_F(LeaderElectorTest, StopWhileCampaigningReturnsWithoutLeading) {
  store_.Put(OtherLease("b", clock_.Now()));
  const int writes = store_.writes();
  Candidate a(store_, Config("a"));
  a.Start();
  ASSERT_TRUE(store_.AwaitGets(1));
  clock_.AwaitWaiters(1);
  EXPECT_TRUE(a.Stop().ok());
  EXPECT_EQ(a.started(), 0);
  EXPECT_EQ(a.stopped(), 0);
  EXPECT_EQ(store_.writes(), writes);
}

TEST_F(LeaderElectorTest, RunsAgainAfterATermEnds) {
  Candidate a(store_, Config("a"));
  a.Start();
  ASSERT_TRUE(a.AwaitStarted());
  store_.Put(OtherLease("b", clock_.Now()));
  AdvanceAfter(1, 2, absl::Seconds(2));
  EXPECT_EQ(a.Join().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(a.stopped(), 1);
  // A second campaign waits b's Lease out like any other candidate: seen at t0+2s, so expired
  // at the attempt at t0+18s.
  a.Start();
  for (int attempt = 3; attempt <= 10; ++attempt) {
    AdvanceAfter(attempt, 1, absl::Seconds(2));
    EXPECT_EQ(a.started(), 1) << "attempt " << attempt;
  }
  ASSERT_TRUE(a.AwaitStarted(2));
  EXPECT_TRUE(a.elector().IsLeader());
  EXPECT_EQ(Stored().holder_identity, "a");
  EXPECT_EQ(Stored().lease_transitions, 4);
  EXPECT_TRUE(a.Stop().ok());
  EXPECT_EQ(a.stopped(), 2);
}

}  // namespace
}  // namespace gpuop::kube
