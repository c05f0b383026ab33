// Leader election between two candidates on a real Lease: a clean hand-off, and a leader cut off
// from the API server. The checks are on the order of events (who led when), never on how long
// anything took.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "kube/leaderelection/leader_elector.h"
#include "test/cluster/test_api.h"
#include "test/integration/kube_test_util.h"

namespace gpuop::test {
namespace {

using kube::Lease;
using kube::LeaseStore;

constexpr char kLeaseName[] = "gpuop-operator";

// Forwards to the API server until Partition(), then fails every call as an unreachable server
// would. Records each takeover it writes: the holder it replaced.
class PartitionableStore final : public LeaseStore {
 public:
  explicit PartitionableStore(LeaseStore& inner) : inner_(inner) {}

  void Partition() { partitioned_ = true; }
  std::vector<std::string> ReplacedHolders() {
    absl::MutexLock lock(&mu_);
    return replaced_;
  }

  absl::StatusOr<Lease> Get(absl::string_view ns, absl::string_view name) override {
    if (partitioned_) return Unreachable("get");
    absl::StatusOr<Lease> lease = inner_.Get(ns, name);
    absl::MutexLock lock(&mu_);
    last_read_holder_ = lease.ok() ? lease->holder_identity : "";
    return lease;
  }
  absl::StatusOr<Lease> Create(const Lease& lease) override {
    if (partitioned_) return Unreachable("create");
    return inner_.Create(lease);
  }
  absl::StatusOr<Lease> Update(const Lease& lease) override {
    if (partitioned_) return Unreachable("update");
    absl::StatusOr<Lease> updated = inner_.Update(lease);
    absl::MutexLock lock(&mu_);
    if (updated.ok() && last_read_holder_ != lease.holder_identity) {
      replaced_.push_back(last_read_holder_);
    }
    return updated;
  }

 private:
  static absl::Status Unreachable(absl::string_view verb) {
    return absl::UnavailableError(absl::StrCat(verb, " lease: connection timed out (partition)"));
  }

  LeaseStore& inner_;
  std::atomic<bool> partitioned_{false};
  absl::Mutex mu_;
  std::string last_read_holder_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> replaced_ ABSL_GUARDED_BY(mu_);
};

// Who started or stopped leading, in the order it happened.
class LeadershipLog {
 public:
  struct Entry {
    std::string who;
    bool started;
    absl::Time at;
  };
  void Add(const std::string& who, bool started) {
    absl::MutexLock lock(&mu_);
    entries_.push_back({who, started, absl::Now()});
  }
  std::vector<Entry> entries() {
    absl::MutexLock lock(&mu_);
    return entries_;
  }
  // "+a -a +b" for a started, a stopped, b started.
  std::string Summary() {
    std::string summary;
    for (const Entry& e : entries()) {
      absl::StrAppend(&summary, summary.empty() ? "" : " ", e.started ? "+" : "-", e.who);
    }
    return summary;
  }
  // Fails the test if two candidates ever led at once, by order and by timestamps.
  void ExpectNoOverlap() {
    std::string leader;
    absl::Time stopped_at = absl::InfinitePast();
    for (const Entry& e : entries()) {
      if (e.started) {
        EXPECT_EQ(leader, "") << e.who << " started while " << leader << " led: " << Summary();
        EXPECT_GE(e.at, stopped_at) << e.who << " started before the previous leader stopped";
        leader = e.who;
      } else {
        EXPECT_EQ(leader, e.who) << Summary();
        leader.clear();
        stopped_at = e.at;
      }
    }
  }

 private:
  absl::Mutex mu_;
  std::vector<Entry> entries_ ABSL_GUARDED_BY(mu_);
};

// A candidate with short durations, running in a thread of its own.
class Candidate {
 public:
  Candidate(const std::string& identity, const std::string& ns, LeaseStore& store,
            LeadershipLog& log) {
    auto elector = kube::LeaderElector::Create(
        store,
        {.lease_namespace = ns,
         .lease_name = kLeaseName,
         .identity = identity,
         .lease_duration = absl::Seconds(3),
         .renew_deadline = absl::Milliseconds(1500),
         .retry_period = absl::Milliseconds(200)},
        {.on_started_leading =
             [identity, &log](std::stop_token stop) {
               log.Add(identity, /*started=*/true);
               absl::Notification stopped;
               std::stop_callback on_stop(stop, [&] { stopped.Notify(); });
               stopped.WaitForNotification();
             },
         .on_stopped_leading = [identity, &log] { log.Add(identity, /*started=*/false); }});
    EXPECT_TRUE(elector.ok()) << elector.status();
    elector_ = *std::move(elector);
  }

  void Start() {
    thread_ = std::jthread([this](std::stop_token stop) { result_ = elector_->Run(stop); });
  }
  absl::Status Stop() {
    thread_.request_stop();
    return Join();
  }
  absl::Status Join() {
    thread_.join();
    return result_;
  }
  kube::LeaderElector& elector() { return *elector_; }

 private:
  std::unique_ptr<kube::LeaderElector> elector_;
  absl::Status result_;
  std::jthread thread_;
};

class LeaderElectionIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = AdminClient();
    ASSERT_NE(client_, nullptr);
    ns_ = CreateTestNamespace(*client_, "lease");
    store_ = std::make_unique<kube::ClientLeaseStore>(*client_);
  }

  // Waits until `candidate` holds the Lease and its work has started: IsLeader() turns true just
  // before the elector hands the work to its own thread, so the log entry may come a moment later.
  absl::Status AwaitLeader(Candidate& candidate, const std::string& name) {
    return WaitUntil(absl::StrCat(name, " leads"), absl::Seconds(30),
                     [&]() -> absl::StatusOr<bool> {
                       return candidate.elector().IsLeader() &&
                              absl::EndsWith(log_.Summary(), absl::StrCat("+", name));
                     });
  }
  // Waits until `candidate` has seen `leader` holding the Lease, so it campaigns against it.
  absl::Status AwaitObserved(Candidate& candidate, const std::string& leader) {
    return WaitUntil(
        absl::StrCat("leader ", leader, " observed"), absl::Seconds(30),
        [&]() -> absl::StatusOr<bool> { return candidate.elector().GetLeader() == leader; });
  }
  Lease ReadLease() {
    absl::StatusOr<Lease> lease = store_->Get(ns_, kLeaseName);
    EXPECT_TRUE(lease.ok()) << lease.status();
    return lease.value_or(Lease{});
  }

  std::unique_ptr<kube::Client> client_;
  std::string ns_;
  std::unique_ptr<kube::ClientLeaseStore> store_;
  LeadershipLog log_;
};

TEST_F(LeaderElectionIntegrationTest, HandsOffOnCleanShutdown) {
  PartitionableStore b_store(*store_);
  Candidate a("a", ns_, *store_, log_);
  Candidate b("b", ns_, b_store, log_);
  a.Start();
  ASSERT_TRUE(AwaitLeader(a, "a").ok());
  b.Start();
  ASSERT_TRUE(AwaitObserved(b, "a").ok());
  EXPECT_FALSE(b.elector().IsLeader());

  EXPECT_TRUE(a.Stop().ok());
  ASSERT_TRUE(AwaitLeader(b, "b").ok());
  EXPECT_EQ(log_.Summary(), "+a -a +b");
  log_.ExpectNoOverlap();
  // b took a released Lease (no holder), not an expired one: a's release is what let it in.
  EXPECT_THAT(b_store.ReplacedHolders(), ::testing::ElementsAre(""));
  const Lease lease = ReadLease();
  EXPECT_EQ(lease.holder_identity, "b");
  EXPECT_EQ(lease.lease_duration_seconds, 3);
  EXPECT_EQ(lease.lease_transitions, 1);

  EXPECT_TRUE(b.Stop().ok());
  EXPECT_EQ(ReadLease().holder_identity, "");
  log_.ExpectNoOverlap();
}

TEST_F(LeaderElectionIntegrationTest, PartitionedLeaderStopsBeforeAnotherStarts) {
  PartitionableStore a_store(*store_);
  PartitionableStore b_store(*store_);
  Candidate a("a", ns_, a_store, log_);
  Candidate b("b", ns_, b_store, log_);
  a.Start();
  ASSERT_TRUE(AwaitLeader(a, "a").ok());
  b.Start();
  ASSERT_TRUE(AwaitObserved(b, "a").ok());

  a_store.Partition();
  ASSERT_TRUE(AwaitLeader(b, "b").ok());
  const absl::Status a_result = a.Join();
  EXPECT_EQ(a_result.code(), absl::StatusCode::kUnavailable) << a_result;
  EXPECT_FALSE(a.elector().IsLeader());
  EXPECT_EQ(log_.Summary(), "+a -a +b");
  log_.ExpectNoOverlap();
  // b waited the Lease out: a never released it.
  EXPECT_THAT(b_store.ReplacedHolders(), ::testing::ElementsAre("a"));
  EXPECT_EQ(ReadLease().holder_identity, "b");
  EXPECT_EQ(ReadLease().lease_transitions, 1);

  EXPECT_TRUE(b.Stop().ok());
  log_.ExpectNoOverlap();
}

}  // namespace
}  // namespace gpuop::test
