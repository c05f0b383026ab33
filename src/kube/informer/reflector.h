#ifndef GPUOP_KUBE_INFORMER_REFLECTOR_H_
#define GPUOP_KUBE_INFORMER_REFLECTOR_H_

#include <atomic>
#include <stop_token>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "kube/client/client.h"
#include "kube/transport/backoff.h"
#include "kube/watch/watch.h"

namespace gpuop::kube {

// Where a Reflector delivers what it learns. Called from the reflector's thread only.
class ReflectorSink {
 public:
  virtual ~ReflectorSink() = default;
  // The complete current state, after the first list and after every relist.
  virtual void Replace(std::vector<Json> items, const std::string& resource_version) = 0;
  // One change seen on the watch (never a bookmark).
  virtual void Apply(WatchEventType type, Json object) = 0;
};

struct ReflectorOptions {
  std::string ns;  // empty: all namespaces
  std::string label_selector;
  std::string field_selector;
  bool metadata_only = false;
  // Page size of lists, so 5,000 objects never arrive in one response.
  int64_t page_size = 500;
  // Server-side watch timeout; each watch draws from [t, 2t) so clients do not reconnect in step.
  absl::Duration watch_timeout = absl::Minutes(5);
  BackoffPolicy backoff{.base = absl::Milliseconds(200), .cap = absl::Seconds(30)};
  const common::Clock* clock = &common::Clock::Real();
};

// Keeps a sink in step with the API server the way client-go's reflector does: list (in pages),
// then watch from the list's resourceVersion with bookmarks, resuming from the last version seen
// whenever a watch ends or breaks; a 410 ("too old") relists. Failures back off exponentially.
// There is no periodic relist: after the first list, the cost follows the rate of change.
class Reflector {
 public:
  Reflector(Client& client, ResourceType type, ReflectorOptions options, ReflectorSink& sink)
      : client_(client), type_(std::move(type)), options_(std::move(options)), sink_(sink) {}

  // Runs until `stop` is requested.
  void Run(std::stop_token stop);

  std::string last_resource_version() const;

  struct Stats {
    int lists = 0;     // successful lists (the first and every relist)
    int watches = 0;   // watch requests opened
    int gone = 0;      // 410 answers that forced a relist
    int failures = 0;  // failed lists or watches
    int events = 0;    // change events delivered
  };
  Stats stats() const;
  // The most recent failure, for diagnostics; OK when there was none.
  absl::Status last_error() const;

 private:
  absl::Status List();
  absl::Status Watch(std::stop_token stop);

  Client& client_;
  const ResourceType type_;
  const ReflectorOptions options_;
  ReflectorSink& sink_;
  mutable absl::Mutex mu_;
  std::string resource_version_ ABSL_GUARDED_BY(mu_);
  Stats stats_ ABSL_GUARDED_BY(mu_);
  absl::Status last_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_INFORMER_REFLECTOR_H_
