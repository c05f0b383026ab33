#ifndef GPUOP_KUBE_EVENTS_FAKE_EVENT_SINK_H_
#define GPUOP_KUBE_EVENTS_FAKE_EVENT_SINK_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "kube/events/event_sink.h"

namespace gpuop::kube {

// An in-memory EventSink: Events by namespace and name, merge patches applied as the API server
// would, and faults to inject (failing calls, blocking calls).
//
// Thread-safe.
class FakeEventSink final : public EventSink {
 public:
  absl::Status Create(absl::string_view ns, const Json& event) override;
  absl::Status Patch(absl::string_view ns, absl::string_view name, const Json& patch) override;

  // The stored Events, ordered by namespace and name.
  std::vector<Json> Events() const;
  std::optional<Json> Get(absl::string_view ns, absl::string_view name) const;
  // Removes an Event, as its TTL would.
  void Expire(absl::string_view ns, absl::string_view name);

  // The next `count` calls fail with `status` (count < 0: every call until changed).
  void Fail(absl::Status status, int count = -1);
  // While blocked, calls wait (in real time) inside the sink until Unblock().
  void Block();
  void Unblock();

  // Calls completed so far, failed ones included.
  int creates() const;
  int patches() const;
  // Block (in real time) until creates() + patches() >= `count`, or until `count` calls wait
  // inside the blocked sink; false when `timeout` passed first. The timeout only keeps a broken
  // test from hanging.
  [[nodiscard]] bool AwaitCalls(int count, absl::Duration timeout = absl::Seconds(30)) const;
  [[nodiscard]] bool AwaitBlocked(int count, absl::Duration timeout = absl::Seconds(30)) const;

 private:
  // Waits while blocked; the failure to return, if any.
  absl::Status Enter() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::map<std::string, Json> events_ ABSL_GUARDED_BY(mu_);  // by "namespace/name"
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  int failures_left_ ABSL_GUARDED_BY(mu_) = 0;
  bool blocked_ ABSL_GUARDED_BY(mu_) = false;
  int creates_ ABSL_GUARDED_BY(mu_) = 0;
  int patches_ ABSL_GUARDED_BY(mu_) = 0;
  int blocked_calls_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_EVENTS_FAKE_EVENT_SINK_H_
