#include "kube/leaderelection/leader_elector.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace gpuop::kube {
namespace {

int32_t WholeSeconds(absl::Duration duration) {
  return static_cast<int32_t>(absl::ToInt64Seconds(absl::Ceil(duration, absl::Seconds(1))));
}

// Whether two reads of the Lease are the same record: any write changes the resourceVersion;
// the spec is compared too for stores that do not keep one.
bool SameRecord(const Lease& a, const Lease& b) {
  return a.metadata.resource_version == b.metadata.resource_version &&
         a.holder_identity == b.holder_identity &&
         a.lease_duration_seconds == b.lease_duration_seconds && a.acquire_time == b.acquire_time &&
         a.renew_time == b.renew_time && a.lease_transitions == b.lease_transitions;
}

absl::Status Prefixed(absl::string_view prefix, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

}  // namespace

LeaderElectionMetrics::LeaderElectionMetrics(metrics::Registry& registry)
    : is_leader(registry.AddGauge("gpuop_leader_election_is_leader",
                                  "1 while this process leads the Lease `name`.", {"name"})),
      errors(registry.AddCounter("gpuop_leader_election_errors_total",
                                 "Failed reads and writes of the leader election Lease `name`.",
                                 {"name"})) {}

absl::Status ValidateLeaderElectorConfig(const LeaderElectorConfig& c) {
  auto invalid = [](absl::string_view field, absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("leader election config: ", field, ": ", why));
  };
  if (c.lease_namespace.empty()) return invalid("lease_namespace", "required");
  if (c.lease_name.empty()) return invalid("lease_name", "required");
  if (c.identity.empty()) return invalid("identity", "required");
  if (c.clock == nullptr) return invalid("clock", "required");
  if (c.lease_duration < absl::Seconds(1)) {
    return invalid("lease_duration", absl::StrCat(absl::FormatDuration(c.lease_duration),
                                                  " is shorter than the minimum of 1s"));
  }
  if (c.renew_deadline >= c.lease_duration) {
    return invalid("renew_deadline", absl::StrCat(absl::FormatDuration(c.renew_deadline),
                                                  " must be shorter than lease_duration (",
                                                  absl::FormatDuration(c.lease_duration), ")"));
  }
  if (c.retry_period <= absl::ZeroDuration()) {
    return invalid("retry_period", "must be positive");
  }
  if (c.retry_period >= c.renew_deadline) {
    return invalid("retry_period", absl::StrCat(absl::FormatDuration(c.retry_period),
                                                " must be shorter than renew_deadline (",
                                                absl::FormatDuration(c.renew_deadline), ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<LeaderElector>> LeaderElector::Create(LeaseStore& store,
                                                                     LeaderElectorConfig config,
                                                                     LeaderCallbacks callbacks) {
  GPUOP_RETURN_IF_ERROR(ValidateLeaderElectorConfig(config));
  if (!callbacks.on_started_leading) {
    return absl::InvalidArgumentError("leader election callbacks: on_started_leading: required");
  }
  return std::unique_ptr<LeaderElector>(
      new LeaderElector(store, std::move(config), std::move(callbacks)));
}

LeaderElector::LeaderElector(LeaseStore& store, LeaderElectorConfig config,
                             LeaderCallbacks callbacks)
    : store_(store),
      config_(std::move(config)),
      callbacks_(std::move(callbacks)),
      clock_(*config_.clock),
      key_(absl::StrCat(config_.lease_namespace, "/", config_.lease_name)) {}

bool LeaderElector::IsLeader() const {
  absl::MutexLock lock(&mu_);
  return is_leader_;
}

std::string LeaderElector::GetLeader() const {
  absl::MutexLock lock(&mu_);
  return leader_;
}

absl::Status LeaderElector::Run(std::stop_token stop) {
  {
    absl::MutexLock lock(&mu_);
    taken_over_ = false;
    stop_requested_ = false;
    work_done_ = false;
  }
  std::stop_callback on_stop(stop, [this] {
    absl::MutexLock lock(&mu_);
    stop_requested_ = true;
    ++term_events_;
  });
  if (!Acquire(stop)) return absl::OkStatus();
  if (stop.stop_requested()) {
    // Won the Lease as shutdown began: no work was started, so there is nothing to stop.
    return config_.release_on_cancel ? Release() : absl::OkStatus();
  }
  return Lead();
}

bool LeaderElector::Acquire(std::stop_token stop) {
  absl::Time next = clock_.Now();
  while (clock_.SleepUntil(next, stop)) {
    const absl::Time start = clock_.Now();
    next = start + config_.retry_period;
    absl::StatusOr<Attempt> attempt = TryAcquireOrRenew();
    if (!attempt.ok()) {
      CountError();
    } else if (*attempt == Attempt::kHeld) {
      absl::MutexLock lock(&mu_);
      last_renew_ = start;
      return true;
    }
  }
  return false;
}

absl::Status LeaderElector::Lead() {
  {
    absl::MutexLock lock(&mu_);
    is_leader_ = true;
  }
  if (config_.metrics != nullptr) config_.metrics->is_leader.With({config_.lease_name}).Set(1);

  std::stop_source work;
  std::jthread worker([this, token = work.get_token()] {
    callbacks_.on_started_leading(token);
    absl::MutexLock lock(&mu_);
    work_done_ = true;
    ++term_events_;
  });
  std::jthread renewer([this](std::stop_token renew_stop) { RenewLoop(renew_stop); });

  const TermEnd end = AwaitTermEnd(work);
  if (end != TermEnd::kStopped) {
    // Stop acting at the deadline, even while a renewal is still in flight in the renewer:
    // others may take the Lease once lease_duration has passed.
    work.request_stop();
    EndTerm();
  }
  renewer.request_stop();
  renewer.join();
  worker.join();

  switch (end) {
    case TermEnd::kStopped:
      // The work has returned, so releasing cannot let a successor overlap with it.
      EndTerm();
      return config_.release_on_cancel ? Release() : absl::OkStatus();
    case TermEnd::kExpired:
      return absl::UnavailableError(absl::StrCat("leader election on lease ", key_,
                                                 ": lost leadership: no renewal succeeded within ",
                                                 absl::FormatDuration(config_.renew_deadline)));
    case TermEnd::kTakenOver:
      break;
  }
  return absl::AbortedError(absl::StrCat("leader election on lease ", key_,
                                         ": lost leadership: the Lease is held by \"", GetLeader(),
                                         "\""));
}

void LeaderElector::RenewLoop(std::stop_token stop) {
  absl::Time next;
  {
    absl::MutexLock lock(&mu_);
    next = last_renew_ + config_.retry_period;
  }
  while (clock_.SleepUntil(next, stop)) {
    const absl::Time start = clock_.Now();
    next = start + config_.retry_period;
    absl::StatusOr<Attempt> attempt = TryAcquireOrRenew();
    if (!attempt.ok()) {
      CountError();
      continue;
    }
    absl::MutexLock lock(&mu_);
    if (*attempt == Attempt::kHeld) {
      last_renew_ = std::max(last_renew_, start);
      ++term_events_;
    } else if (*attempt == Attempt::kHeldByOther) {
      taken_over_ = true;
      ++term_events_;
      return;
    }
  }
}

LeaderElector::TermEnd LeaderElector::AwaitTermEnd(std::stop_source& work) {
  bool work_stop_requested = false;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      while (true) {
        if (taken_over_) return TermEnd::kTakenOver;
        const absl::Time deadline = last_renew_ + config_.renew_deadline;
        if (clock_.Now() >= deadline) return TermEnd::kExpired;
        if (stop_requested_) {
          // Renewals go on while the work winds down, so the Lease stays ours until then.
          if (work_done_) return TermEnd::kStopped;
          if (!work_stop_requested) break;
        }
        const uint64_t seen = term_events_;
        auto changed = [this, seen]()
                           ABSL_SHARED_LOCKS_REQUIRED(mu_) { return term_events_ != seen; };
        clock_.AwaitWithDeadline(mu_, absl::Condition(&changed), deadline);
      }
    }
    // Outside mu_: the work's stop callbacks run inside request_stop() and may call IsLeader().
    work.request_stop();
    work_stop_requested = true;
  }
}

void LeaderElector::EndTerm() {
  {
    absl::MutexLock lock(&mu_);
    is_leader_ = false;
  }
  if (config_.metrics != nullptr) config_.metrics->is_leader.With({config_.lease_name}).Set(0);
  if (callbacks_.on_stopped_leading) callbacks_.on_stopped_leading();
}

absl::Status LeaderElector::Release() {
  const std::string what = absl::StrCat("release lease ", key_, ": ");
  absl::StatusOr<Lease> current = store_.Get(config_.lease_namespace, config_.lease_name);
  if (absl::IsNotFound(current.status())) return absl::OkStatus();
  if (!current.ok()) {
    CountError();
    return Prefixed(what, current.status());
  }
  // Someone else took it: there is nothing of ours to release.
  if (current->holder_identity != config_.identity) return absl::OkStatus();
  const absl::Time now = clock_.Now();
  Lease released = *std::move(current);
  released.holder_identity.clear();
  // Like client-go: a one-second duration, so a candidate that does not treat an empty holder
  // as free still takes over almost at once.
  released.lease_duration_seconds = 1;
  released.acquire_time = now;
  released.renew_time = now;
  absl::StatusOr<Lease> updated = store_.Update(released);
  if (!updated.ok()) {
    CountError();
    return Prefixed(what, updated.status());
  }
  Observe(*updated, clock_.Now());
  return absl::OkStatus();
}

absl::StatusOr<LeaderElector::Attempt> LeaderElector::TryAcquireOrRenew() {
  absl::StatusOr<Lease> current = store_.Get(config_.lease_namespace, config_.lease_name);
  // Read after the answer: the record may have been written any time before it, and others'
  // expiry must count from no earlier than that write.
  const absl::Time now = clock_.Now();
  if (!current.ok()) {
    if (current.status().code() != absl::StatusCode::kNotFound) return current.status();
    absl::StatusOr<Lease> created = store_.Create(Desired(nullptr, now));
    if (!created.ok()) {
      if (created.status().code() == absl::StatusCode::kAlreadyExists) return Attempt::kConflict;
      return created.status();
    }
    Observe(*created, clock_.Now());
    return Attempt::kHeld;
  }

  Observe(*current, now);
  if (!current->holder_identity.empty() && current->holder_identity != config_.identity) {
    absl::MutexLock lock(&mu_);
    if (now < observed_time_ + absl::Seconds(current->lease_duration_seconds)) {
      return Attempt::kHeldByOther;
    }
  }
  absl::StatusOr<Lease> updated = store_.Update(Desired(&*current, now));
  if (!updated.ok()) {
    if (updated.status().code() == absl::StatusCode::kAborted) return Attempt::kConflict;
    return updated.status();
  }
  Observe(*updated, clock_.Now());
  return Attempt::kHeld;
}

void LeaderElector::Observe(const Lease& lease, absl::Time at) {
  bool new_leader = false;
  {
    absl::MutexLock lock(&mu_);
    if (!observed_ || !SameRecord(*observed_, lease)) {
      observed_ = lease;
      observed_time_ = at;
    }
    if (lease.holder_identity != leader_) {
      leader_ = lease.holder_identity;
      new_leader = true;
    }
  }
  if (new_leader && callbacks_.on_new_leader) callbacks_.on_new_leader(lease.holder_identity);
}

Lease LeaderElector::Desired(const Lease* current, absl::Time now) const {
  Lease lease;
  if (current != nullptr) lease.metadata = current->metadata;
  lease.metadata.name = config_.lease_name;
  lease.metadata.namespace_ = config_.lease_namespace;
  lease.holder_identity = config_.identity;
  lease.lease_duration_seconds = WholeSeconds(config_.lease_duration);
  lease.renew_time = now;
  if (current != nullptr && current->holder_identity == config_.identity) {
    lease.acquire_time = current->acquire_time.value_or(now);
    lease.lease_transitions = current->lease_transitions;
  } else {
    lease.acquire_time = now;
    lease.lease_transitions = current != nullptr ? current->lease_transitions + 1 : 0;
  }
  return lease;
}

void LeaderElector::CountError() {
  if (config_.metrics != nullptr) config_.metrics->errors.With({config_.lease_name}).Inc();
}

}  // namespace gpuop::kube
