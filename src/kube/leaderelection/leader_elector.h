#ifndef GPUOP_KUBE_LEADERELECTION_LEADER_ELECTOR_H_
#define GPUOP_KUBE_LEADERELECTION_LEADER_ELECTOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "kube/leaderelection/lease_store.h"
#include "kube/types/lease.h"
#include "metrics/registry.h"

namespace gpuop::kube {

// Metrics of every elector in a process, registered once per registry:
//   gpuop_leader_election_is_leader{name}      1 while this process leads lease `name`
//   gpuop_leader_election_errors_total{name}   failed reads and writes of the Lease
class LeaderElectionMetrics {
 public:
  explicit LeaderElectionMetrics(metrics::Registry& registry);

  metrics::Family<metrics::Gauge>& is_leader;
  metrics::Family<metrics::Counter>& errors;
};

struct LeaderElectorConfig {
  // The Lease competed for.
  std::string lease_namespace;
  std::string lease_name;
  // This candidate, unique among candidates (the pod name); written as the holder.
  std::string identity;
  // How long others wait, from when they last saw the Lease change, before taking it over.
  // Written into the Lease in whole seconds, rounded up.
  absl::Duration lease_duration = absl::Seconds(15);
  // How long the leader keeps acting without a successful renewal. Shorter than
  // lease_duration: the difference is the margin that keeps two leaders from overlapping.
  absl::Duration renew_deadline = absl::Seconds(10);
  // The interval between attempts to acquire or renew.
  absl::Duration retry_period = absl::Seconds(2);
  // On a clean shutdown the leader releases the Lease so that another candidate takes over at
  // its next attempt instead of after lease_duration. Only safe when on_started_leading's work
  // has stopped by the time it returns, which Run() waits for.
  bool release_on_cancel = true;
  const common::Clock* clock = &common::Clock::Real();
  LeaderElectionMetrics* metrics = nullptr;
};

// OK, or InvalidArgument naming the field: identity and the Lease name and namespace set;
// 0 < retry_period < renew_deadline < lease_duration; lease_duration at least a second.
[[nodiscard]] absl::Status ValidateLeaderElectorConfig(const LeaderElectorConfig& config);

struct LeaderCallbacks {
  // Required. Runs on a thread of its own when this candidate becomes the leader; it may block
  // for the whole term. `stop` is requested when leadership ends (renewals failed for
  // renew_deadline, another holder took the Lease, or Run's stop was requested); the work must
  // then stop at once, and the function should return.
  std::function<void(std::stop_token stop)> on_started_leading;
  // Called once per term, after `stop` above was requested, from Run's thread. When renewals
  // failed it is called at the renew deadline, before any other candidate can take the Lease,
  // even if a request to the API server is still hanging.
  std::function<void()> on_stopped_leading;
  // Called when the observed holder changes (to this candidate too), with the holder's identity
  // ("" when the Lease was released). From the elector's threads: must not block.
  std::function<void(const std::string& identity)> on_new_leader;
};

// Leader election on a coordination.k8s.io/v1 Lease, with the semantics of client-go's
// leaderelection package:
//   - Every retry_period a candidate reads the Lease. It creates it when absent, takes it when
//     released (no holder) or expired, and renews it when it holds it. A Lease held by another
//     is expired when it has not changed for its leaseDurationSeconds as measured on this
//     candidate's clock from when this candidate saw it change: remote timestamps (renewTime)
//     are never compared with the local clock, so clock skew between machines is harmless.
//   - Writes carry the resourceVersion read, so of two racing candidates one gets a conflict
//     (Aborted) and re-reads at its next attempt.
//   - The leader stops leading when no renewal succeeded within renew_deadline of the start of
//     the last successful one; the start is used because the write may land any time before
//     the answer. Others take over no earlier than lease_duration after they observed that
//     write, so the old leader has stopped (on_stopped_leading returned, its stop token
//     requested) before a new one starts, given clocks that run at the same rate.
//   - leaseTransitions increments when the holder changes; acquireTime is the holder's start.
//
// Thread-safe: IsLeader() and GetLeader() may be called from any thread; Run() from one thread
// at a time. `store` must outlive the elector.
class LeaderElector {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<LeaderElector>> Create(
      LeaseStore& store, LeaderElectorConfig config, LeaderCallbacks callbacks);

  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // Campaigns until this candidate leads, leads until the term ends, and returns. Blocks.
  // Returns OK when `stop` ended the campaign or the term (after releasing the Lease when
  // release_on_cancel: the release's error, if it failed); Unavailable when renewals failed
  // for renew_deadline; Aborted when another candidate took the Lease. After the term ends the
  // caller decides whether to campaign again (call Run again) or exit.
  //
  // A term's threads (on_started_leading's and the renewer) are joined before Run returns.
  [[nodiscard]] absl::Status Run(std::stop_token stop);

  // Whether this candidate leads now: true from just before on_started_leading until just
  // before on_stopped_leading.
  bool IsLeader() const;
  // The holder last observed in the Lease, "" when none.
  std::string GetLeader() const;

 private:
  // What one attempt to acquire or renew found.
  enum class Attempt {
    kHeld,         // this candidate holds the Lease: created, taken over or renewed
    kHeldByOther,  // another candidate holds a live Lease
    kConflict,     // a competing write won: re-read at the next attempt
  };
  // How a term ended.
  enum class TermEnd { kStopped, kExpired, kTakenOver };

  LeaderElector(LeaseStore& store, LeaderElectorConfig config, LeaderCallbacks callbacks);

  // Attempts every retry_period until one holds the Lease (true) or `stop` (false).
  bool Acquire(std::stop_token stop);
  // The term: starts on_started_leading and the renewer, waits for the end, stops the work.
  absl::Status Lead();
  // Runs in the renewer thread: renews every retry_period until `stop`.
  void RenewLoop(std::stop_token stop);
  // Waits (in Run's thread) until the term ends.
  TermEnd AwaitTermEnd(std::stop_source& work);
  void EndTerm();
  absl::Status Release();

  // One read and, when this candidate may hold the Lease, one write.
  absl::StatusOr<Attempt> TryAcquireOrRenew();
  // Records a record read or written at `at`, restarting the expiry timer when it changed.
  void Observe(const Lease& lease, absl::Time at);
  // The record this candidate writes to hold the Lease, given the current one.
  Lease Desired(const Lease* current, absl::Time now) const;
  void CountError();

  LeaseStore& store_;
  const LeaderElectorConfig config_;
  const LeaderCallbacks callbacks_;
  const common::Clock& clock_;
  const std::string key_;  // "namespace/name", for messages

  mutable absl::Mutex mu_;
  std::optional<Lease> observed_ ABSL_GUARDED_BY(mu_);
  // When observed_ last changed, on clock_.
  absl::Time observed_time_ ABSL_GUARDED_BY(mu_);
  std::string leader_ ABSL_GUARDED_BY(mu_);
  bool is_leader_ ABSL_GUARDED_BY(mu_) = false;

  // The current term, written by its threads and read by AwaitTermEnd.
  // Start of the last attempt that renewed the Lease.
  absl::Time last_renew_ ABSL_GUARDED_BY(mu_);
  bool taken_over_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_requested_ ABSL_GUARDED_BY(mu_) = false;
  bool work_done_ ABSL_GUARDED_BY(mu_) = false;
  // Incremented on each change above, to wake AwaitTermEnd.
  uint64_t term_events_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_LEADERELECTION_LEADER_ELECTOR_H_
