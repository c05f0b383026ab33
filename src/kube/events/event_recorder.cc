#include "kube/events/event_recorder.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace gpuop::kube {
namespace {

bool IsTransient(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kUnknown:
      return true;
    default:
      return false;
  }
}

absl::Status ValidateOptions(const EventRecorderOptions& o) {
  auto invalid = [](absl::string_view field, absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("event recorder options: ", field, ": ", why));
  };
  if (o.reporting_controller.empty()) return invalid("reporting_controller", "required");
  if (o.reporting_controller.size() > kMaxReportingBytes) {
    return invalid("reporting_controller", "longer than 128 bytes");
  }
  if (o.reporting_instance.empty()) return invalid("reporting_instance", "required");
  if (o.reporting_instance.size() > kMaxReportingBytes) {
    return invalid("reporting_instance", "longer than 128 bytes");
  }
  if (o.clock == nullptr) return invalid("clock", "required");
  if (o.aggregation_window <= absl::ZeroDuration()) {
    return invalid("aggregation_window", "must be positive");
  }
  if (o.spam_burst < 1) return invalid("spam_burst", "must be at least 1");
  if (o.spam_refill_interval <= absl::ZeroDuration()) {
    return invalid("spam_refill_interval", "must be positive");
  }
  if (o.series_flush_interval <= absl::ZeroDuration()) {
    return invalid("series_flush_interval", "must be positive");
  }
  if (o.queue_capacity < 1) return invalid("queue_capacity", "must be at least 1");
  if (o.max_write_attempts < 1) return invalid("max_write_attempts", "must be at least 1");
  return absl::OkStatus();
}

}  // namespace

struct EventRecorder::Metrics {
  explicit Metrics(metrics::Registry& r)
      : written(r.AddCounter("gpuop_events_written_total",
                             "Writes of Events to the API server: create, or series update.",
                             {"operation"})),
        aggregated(r.AddCounter("gpuop_events_aggregated_total",
                                "Event occurrences folded into the series of an existing Event.")
                       .Get()),
        dropped(r.AddCounter("gpuop_events_dropped_total",
                             "Events or series updates given up, by reason.", {"reason"})) {}

  metrics::Family<metrics::Counter>& written;
  metrics::Counter& aggregated;
  metrics::Family<metrics::Counter>& dropped;
};

absl::StatusOr<std::unique_ptr<EventRecorder>> EventRecorder::Create(Client& client,
                                                                     EventRecorderOptions options) {
  GPUOP_RETURN_IF_ERROR(ValidateOptions(options));
  auto sink = std::make_unique<ClientEventSink>(client);
  EventSink& ref = *sink;
  return std::unique_ptr<EventRecorder>(
      new EventRecorder(ref, std::move(sink), std::move(options)));
}

absl::StatusOr<std::unique_ptr<EventRecorder>> EventRecorder::Create(EventSink& sink,
                                                                     EventRecorderOptions options) {
  GPUOP_RETURN_IF_ERROR(ValidateOptions(options));
  return std::unique_ptr<EventRecorder>(new EventRecorder(sink, nullptr, std::move(options)));
}

EventRecorder::EventRecorder(EventSink& sink, std::unique_ptr<EventSink> owned,
                             EventRecorderOptions options)
    : sink_(sink),
      owned_sink_(std::move(owned)),
      options_(std::move(options)),
      clock_(*options_.clock),
      metrics_(options_.metrics != nullptr ? std::make_unique<Metrics>(*options_.metrics)
                                           : nullptr) {
  {
    absl::MutexLock lock(&mu_);
    next_sweep_ = clock_.Now() + options_.aggregation_window;
  }
  writer_ = std::jthread([this](std::stop_token stop) { WriterLoop(stop); });
}

EventRecorder::~EventRecorder() { Stop(); }

void EventRecorder::Stop() {
  absl::MutexLock stop_lock(&stop_mu_);
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (writer_.joinable()) {
    writer_.request_stop();
    writer_.join();
  }
}

EventRecorderStats EventRecorder::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void EventRecorder::Record(const ObjectReference& regarding, EventType type,
                           absl::string_view reason, absl::string_view action,
                           absl::string_view note) {
  Record({.regarding = regarding,
          .type = type,
          .reason = std::string(reason),
          .action = std::string(action),
          .note = std::string(note)});
}

void EventRecorder::Record(EventDetails event) {
  event.reason = Truncate(event.reason, kMaxReasonBytes);
  event.action = Truncate(event.action, kMaxActionBytes);
  event.note = Truncate(event.note, kMaxNoteBytes);
  const bool valid = !event.reason.empty() && !event.action.empty() &&
                     !event.regarding.name.empty() && !event.regarding.kind.empty();
  const std::string object_key = event.regarding.Key();
  const std::string key = absl::StrCat(object_key, "\n", event.related ? event.related->Key() : "",
                                       "\n", EventTypeName(event.type), "\n", event.reason, "\n",
                                       event.action, "\n", event.note);
  const absl::Time now = clock_.Now();

  absl::MutexLock lock(&mu_);
  if (stopping_) return Drop("stopped", &EventRecorderStats::dropped_stopped);
  if (!valid) return Drop("invalid", &EventRecorderStats::dropped_invalid);
  if (auto it = series_.find(key); it != series_.end()) {
    Series& s = it->second;
    // A series not yet created or being written always continues: it cannot have ended.
    if (s.written == 0 || s.in_flight || now - s.last_observed < options_.aggregation_window) {
      ++s.count;
      s.last_observed = std::max(s.last_observed, now);
      ++stats_.aggregated;
      if (metrics_ != nullptr) metrics_->aggregated.Inc();
      if (s.written > 0 && !s.in_flight && dirty_.insert(key).second) wake_ = true;
      return;
    }
  }
  if (!TakeToken(object_key, now)) return Drop("spam_filter", &EventRecorderStats::dropped_spam);
  if (queue_.size() >= options_.queue_capacity) {
    return Drop("queue_full", &EventRecorderStats::dropped_queue_full);
  }
  const std::string ns = EventNamespace(event.regarding);
  const std::string name = EventName(event.regarding.name, absl::Uniform<uint64_t>(random_));
  Pending pending{.key = key,
                  .ns = ns,
                  .object = EventObject(event, name, ns, now, options_.reporting_controller,
                                        options_.reporting_instance)};
  if (series_.contains(key) || series_.size() < options_.max_series) {
    series_[key] = Series{.ns = ns, .name = name, .last_observed = now};
    dirty_.erase(key);
  } else {
    pending.key.clear();
  }
  queue_.push_back(std::move(pending));
  wake_ = true;
}

bool EventRecorder::TakeToken(const std::string& object_key, absl::Time now) {
  const double burst = options_.spam_burst;
  Bucket& bucket = buckets_.try_emplace(object_key, Bucket{burst, now}).first->second;
  if (now > bucket.last) {
    bucket.tokens =
        std::min(burst, bucket.tokens +
                            absl::FDivDuration(now - bucket.last, options_.spam_refill_interval));
    bucket.last = now;
  }
  if (bucket.tokens < 1) return false;
  bucket.tokens -= 1;
  return true;
}

void EventRecorder::Drop(const char* reason, int64_t EventRecorderStats::*counter, int64_t n) {
  stats_.*counter += n;
  if (metrics_ != nullptr) metrics_->dropped.With({reason}).Inc(static_cast<double>(n));
}

void EventRecorder::TakeWork(absl::Time now, bool all, std::vector<Pending>& creates,
                             std::vector<Update>& updates) {
  for (; !queue_.empty(); queue_.pop_front()) {
    Pending& pending = queue_.front();
    if (auto it = series_.find(pending.key); it != series_.end()) it->second.in_flight = true;
    creates.push_back(std::move(pending));
  }
  for (auto it = dirty_.begin(); it != dirty_.end();) {
    auto found = series_.find(*it);
    if (found == series_.end() || found->second.written == 0 || found->second.in_flight) {
      // Not writable now; the write in flight re-marks it when it completes.
      dirty_.erase(it++);
      continue;
    }
    Series& s = found->second;
    if (!all && now < s.last_write + options_.series_flush_interval) {
      ++it;
      continue;
    }
    updates.push_back({.key = *it,
                       .ns = s.ns,
                       .name = s.name,
                       .count = s.count,
                       .last_observed = s.last_observed});
    s.in_flight = true;
    dirty_.erase(it++);
  }
}

absl::Time EventRecorder::NextFlush() const {
  absl::Time next = absl::InfiniteFuture();
  for (const std::string& key : dirty_) {
    auto it = series_.find(key);
    if (it == series_.end() || it->second.written == 0 || it->second.in_flight) continue;
    next = std::min(next, it->second.last_write + options_.series_flush_interval);
  }
  return next;
}

void EventRecorder::Sweep(absl::Time now) {
  for (auto it = series_.begin(); it != series_.end();) {
    const Series& s = it->second;
    const bool ended = s.written > 0 && !s.in_flight && s.count <= s.written &&
                       now - s.last_observed >= options_.aggregation_window;
    if (ended) {
      series_.erase(it++);
    } else {
      ++it;
    }
  }
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    const double refilled = it->second.tokens + absl::FDivDuration(now - it->second.last,
                                                                   options_.spam_refill_interval);
    if (refilled >= options_.spam_burst) {
      buckets_.erase(it++);
    } else {
      ++it;
    }
  }
}

void EventRecorder::WriterLoop(std::stop_token stop) {
  std::vector<Pending> creates;
  std::vector<Update> updates;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      while (!stopping_) {
        const absl::Time now = clock_.Now();
        if (now >= next_sweep_) {
          Sweep(now);
          next_sweep_ = now + options_.aggregation_window;
        }
        TakeWork(now, /*all=*/false, creates, updates);
        if (!creates.empty() || !updates.empty()) break;
        wake_ = false;
        auto woken = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return wake_ || stopping_; };
        clock_.AwaitWithDeadline(mu_, absl::Condition(&woken), std::min(NextFlush(), next_sweep_));
      }
    }
    if (creates.empty() && updates.empty()) break;
    for (const Pending& pending : creates) (void)WriteCreate(pending, /*once=*/false, stop);
    for (const Update& update : updates) (void)WriteUpdate(update, /*once=*/false, stop);
    creates.clear();
    updates.clear();
  }

  // Stopping: everything pending, once each; once the API server proves unreachable the rest is
  // dropped rather than making Stop() wait for each write to fail in turn.
  {
    absl::MutexLock lock(&mu_);
    TakeWork(clock_.Now(), /*all=*/true, creates, updates);
  }
  bool reachable = true;
  auto write = [&](auto& item, auto write_one) {
    if (!reachable) {
      absl::MutexLock lock(&mu_);
      return Drop("stopped", &EventRecorderStats::dropped_stopped);
    }
    if (IsTransient((this->*write_one)(item, /*once=*/true, stop))) reachable = false;
  };
  for (const Pending& pending : creates) write(pending, &EventRecorder::WriteCreate);
  for (const Update& update : updates) write(update, &EventRecorder::WriteUpdate);
}

absl::Status EventRecorder::WriteCreate(const Pending& pending, bool once, std::stop_token stop) {
  Json object = pending.object;
  int64_t count = 1;
  {
    absl::MutexLock lock(&mu_);
    if (auto it = series_.find(pending.key); it != series_.end()) {
      count = it->second.count;
      // Occurrences while the Event waited in the queue: create it with its series.
      if (count >= 2) object["series"] = EventSeries(count, it->second.last_observed);
    }
  }
  const absl::Status status =
      WithRetries([&] { return sink_.Create(pending.ns, object); }, once, stop);
  // AlreadyExists: a retry found the Event that an earlier try created before its answer was
  // lost. (Names carry 64 random bits; a collision with another Event is not a concern.)
  const bool created = status.ok() || status.code() == absl::StatusCode::kAlreadyExists;

  absl::MutexLock lock(&mu_);
  if (created) {
    ++stats_.created;
    if (metrics_ != nullptr) metrics_->written.With({"create"}).Inc();
  } else {
    Drop("write_failed", &EventRecorderStats::dropped_write_failed);
  }
  auto it = series_.find(pending.key);
  if (it == series_.end()) return status;
  if (!created) {
    // The next occurrence tries again with a new Event.
    series_.erase(it);
    return status;
  }
  Series& s = it->second;
  s.in_flight = false;
  s.written = count;
  s.last_write = clock_.Now();
  if (s.count > s.written) dirty_.insert(pending.key);
  return status;
}

absl::Status EventRecorder::WriteUpdate(const Update& update, bool once, std::stop_token stop) {
  const Json patch = {{"series", EventSeries(update.count, update.last_observed)}};
  const absl::Status status =
      WithRetries([&] { return sink_.Patch(update.ns, update.name, patch); }, once, stop);

  absl::MutexLock lock(&mu_);
  if (status.ok()) {
    ++stats_.series_updates;
    if (metrics_ != nullptr) metrics_->written.With({"series_update"}).Inc();
  } else {
    Drop("write_failed", &EventRecorderStats::dropped_write_failed);
  }
  auto it = series_.find(update.key);
  if (it == series_.end() || it->second.name != update.name) return status;
  if (status.code() == absl::StatusCode::kNotFound) {
    // The Event expired (the API server keeps Events for an hour since their last write) or
    // was deleted: the next occurrence creates a new one.
    series_.erase(it);
    return status;
  }
  Series& s = it->second;
  s.in_flight = false;
  // Also after a failure: the next update carries the absolute count and repairs this one.
  s.written = std::max(s.written, update.count);
  s.last_write = clock_.Now();
  if (s.count > s.written) dirty_.insert(update.key);
  return status;
}

absl::Status EventRecorder::WithRetries(const std::function<absl::Status()>& write, bool once,
                                        std::stop_token stop) {
  for (int attempt = 0;; ++attempt) {
    absl::Status status = write();
    if (status.ok() || !IsTransient(status) || once || attempt + 1 >= options_.max_write_attempts ||
        stop.stop_requested()) {
      return status;
    }
    if (!clock_.SleepFor(BackoffDelay(options_.write_backoff, attempt, writer_random_), stop)) {
      return status;
    }
  }
}

}  // namespace gpuop::kube
