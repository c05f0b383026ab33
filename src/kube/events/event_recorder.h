#ifndef GPUOP_KUBE_EVENTS_EVENT_RECORDER_H_
#define GPUOP_KUBE_EVENTS_EVENT_RECORDER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/random/random.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "kube/client/client.h"
#include "kube/events/event.h"
#include "kube/events/event_sink.h"
#include "kube/transport/backoff.h"
#include "metrics/registry.h"

namespace gpuop::kube {

struct EventRecorderOptions {
  // Who reports: reportingController ("gpuop.io/operator") and reportingInstance (the pod
  // name); both required, at most 128 bytes.
  std::string reporting_controller = "gpuop.io/operator";
  std::string reporting_instance;
  const common::Clock* clock = &common::Clock::Real();
  // An event identical to one observed less than this long ago joins its series instead of
  // creating another Event (client-go: 6 minutes).
  absl::Duration aggregation_window = absl::Minutes(6);
  // Per regarding object, new Events are limited to a burst of `spam_burst`, then one per
  // `spam_refill_interval` (client-go's spam filter: 25, one per 5 minutes).
  int spam_burst = 25;
  absl::Duration spam_refill_interval = absl::Minutes(5);
  // A series' count and lastObservedTime are written at most once per interval.
  absl::Duration series_flush_interval = absl::Seconds(30);
  // New Events waiting to be written; more are dropped.
  size_t queue_capacity = 1000;
  // Series tracked for aggregation. Beyond it new Events are still written but not aggregated.
  size_t max_series = 16384;
  // Tries per write (the first included) for transient errors, `write_backoff` apart.
  int max_write_attempts = 3;
  BackoffPolicy write_backoff = {.base = absl::Seconds(1), .cap = absl::Seconds(10)};
  // Registers gpuop_events_written_total{operation}, gpuop_events_aggregated_total and
  // gpuop_events_dropped_total{reason}; none if null. One recorder per registry.
  metrics::Registry* metrics = nullptr;
};

// Counts since the recorder was created; the metrics carry the same numbers.
struct EventRecorderStats {
  int64_t created = 0;         // Events created
  int64_t series_updates = 0;  // series patches written
  int64_t aggregated = 0;      // occurrences folded into an existing Event
  // Dropped: by the spam filter; the queue was full; writing failed; invalid details (no
  // reason, action, or regarding name/kind); recorded or still pending at Stop().
  int64_t dropped_spam = 0;
  int64_t dropped_queue_full = 0;
  int64_t dropped_write_failed = 0;
  int64_t dropped_invalid = 0;
  int64_t dropped_stopped = 0;
};

// Records events.k8s.io/v1 Events without ever making its callers wait on the API server:
// Record() folds the event into local state and returns; a background thread writes.
//
//   - Aggregation: an event identical in (regarding, type, reason, action, note) to one observed
//     within aggregation_window is not created again. Its count grows locally, and the Event's
//     `series` {count, lastObservedTime} is patched at most once per series_flush_interval, so a
//     flapping condition costs one write per interval, not one per occurrence. The series ends
//     when the event has not recurred for aggregation_window.
//   - Spam filter: new Events per regarding object draw from a token bucket; beyond it they are
//     dropped. Occurrences folded into a series do not count against it.
//   - A bounded queue of new Events; when full, events are dropped.
//   - Transient write errors are retried with backoff, then the write is dropped. A series
//     update carries the absolute count, so a later one repairs a dropped one.
// Every drop is counted (stats() and gpuop_events_dropped_total{reason}).
//
// Thread-safe. The sink (or client) must outlive the recorder.
class EventRecorder {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<EventRecorder>> Create(
      Client& client, EventRecorderOptions options);
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<EventRecorder>> Create(
      EventSink& sink, EventRecorderOptions options);

  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;
  // Stop().
  ~EventRecorder();

  // Records an event; returns at once. Reason and action longer than 128 bytes and notes
  // longer than 1024 bytes are truncated.
  void Record(EventDetails event);
  void Record(const ObjectReference& regarding, EventType type, absl::string_view reason,
              absl::string_view action, absl::string_view note);
  // Record() with the note formatted by absl::StrFormat.
  template <typename... Args>
  void Eventf(const ObjectReference& regarding, EventType type, absl::string_view reason,
              absl::string_view action, const absl::FormatSpec<Args...>& format,
              const Args&... args) {
    Record(regarding, type, reason, action, absl::StrFormat(format, args...));
  }

  // Writes what is pending (new Events, and series updates without waiting for their flush
  // time; one try each, giving up on the rest once the API server is unreachable) and stops
  // the writer. Events recorded afterwards are dropped. Idempotent.
  void Stop();

  EventRecorderStats stats() const;

 private:
  // An Event and the occurrences folded into it, by aggregation key.
  struct Series {
    std::string ns;
    std::string name;
    int64_t count = 1;    // occurrences observed
    int64_t written = 0;  // the count the API server has; 0 until the Event is created
    absl::Time last_observed;
    absl::Time last_write = absl::InfinitePast();
    bool in_flight = false;  // the writer is writing it
  };
  // A new Event to create. `key` is its series' key, "" when not tracked.
  struct Pending {
    std::string key;
    std::string ns;
    Json object;
  };
  // A series update to write.
  struct Update {
    std::string key;
    std::string ns;
    std::string name;
    int64_t count;
    absl::Time last_observed;
  };
  struct Bucket {
    double tokens;
    absl::Time last;
  };
  struct Metrics;

  EventRecorder(EventSink& sink, std::unique_ptr<EventSink> owned, EventRecorderOptions options);

  bool TakeToken(const std::string& object_key, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves what is due into `creates` and `updates`; all of it when `all`.
  void TakeWork(absl::Time now, bool all, std::vector<Pending>& creates,
                std::vector<Update>& updates) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Time NextFlush() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets series that ended and token buckets that are full again.
  void Sweep(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WriterLoop(std::stop_token stop);
  // Writes one item, with retries unless `once`. Returns the write's status.
  absl::Status WriteCreate(const Pending& pending, bool once, std::stop_token stop);
  absl::Status WriteUpdate(const Update& update, bool once, std::stop_token stop);
  absl::Status WithRetries(const std::function<absl::Status()>& write, bool once,
                           std::stop_token stop);
  void Drop(const char* reason, int64_t EventRecorderStats::*counter, int64_t n = 1)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  EventSink& sink_;
  const std::unique_ptr<EventSink> owned_sink_;
  const EventRecorderOptions options_;
  const common::Clock& clock_;
  std::unique_ptr<Metrics> metrics_;

  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Series> series_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, Bucket> buckets_ ABSL_GUARDED_BY(mu_);  // by object
  std::deque<Pending> queue_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> dirty_ ABSL_GUARDED_BY(mu_);  // count > written
  absl::Time next_sweep_ ABSL_GUARDED_BY(mu_);
  bool wake_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  EventRecorderStats stats_ ABSL_GUARDED_BY(mu_);
  absl::BitGen random_ ABSL_GUARDED_BY(mu_);

  absl::BitGen writer_random_;  // used by the writer thread only
  absl::Mutex stop_mu_;         // serializes Stop()
  std::jthread writer_;
};

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_EVENTS_EVENT_RECORDER_H_
