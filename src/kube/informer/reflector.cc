#include "kube/informer/reflector.h"

#include "absl/random/random.h"

namespace gpuop::kube {

std::string Reflector::last_resource_version() const {
  absl::MutexLock lock(&mu_);
  return resource_version_;
}

absl::Status Reflector::last_error() const {
  absl::MutexLock lock(&mu_);
  return last_error_;
}

Reflector::Stats Reflector::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

absl::Status Reflector::List() {
  absl::StatusOr<ObjectList> list = client_.ListAll(type_, options_.ns,
                                                    {.label_selector = options_.label_selector,
                                                     .field_selector = options_.field_selector,
                                                     .limit = options_.page_size,
                                                     .metadata_only = options_.metadata_only});
  if (!list.ok()) return list.status();
  {
    absl::MutexLock lock(&mu_);
    resource_version_ = list->resource_version;
    ++stats_.lists;
  }
  sink_.Replace(std::move(list->items), list->resource_version);
  return absl::OkStatus();
}

absl::Status Reflector::Watch(std::stop_token stop) {
  absl::BitGen random;
  const absl::Duration timeout = options_.watch_timeout * absl::Uniform(random, 1.0, 2.0);
  WatchOptions watch{.resource_version = last_resource_version(),
                     .label_selector = options_.label_selector,
                     .field_selector = options_.field_selector,
                     .allow_bookmarks = true,
                     .metadata_only = options_.metadata_only,
                     .server_timeout = timeout};
  {
    absl::MutexLock lock(&mu_);
    ++stats_.watches;
  }
  return WatchOnce(
      client_, type_, options_.ns, watch,
      [this](WatchEvent event) {
        const Json& meta = event.object.value("metadata", Json::object());
        std::string version = meta.value("resourceVersion", "");
        if (event.type != WatchEventType::kBookmark) {
          sink_.Apply(event.type, std::move(event.object));
        }
        absl::MutexLock lock(&mu_);
        if (!version.empty()) resource_version_ = std::move(version);
        if (event.type != WatchEventType::kBookmark) ++stats_.events;
        return true;
      },
      stop);
}

void Reflector::Run(std::stop_token stop) {
  absl::BitGen random;
  bool listed = false;
  int failures = 0;
  while (!stop.stop_requested()) {
    const absl::Time start = options_.clock->Now();
    const int events_before = stats().events;
    absl::Status status = listed ? Watch(stop) : List();
    if (stop.stop_requested()) break;
    // A watch the server ends at once, again and again, must not become a busy loop.
    if (status.ok() && listed && stats().events == events_before &&
        options_.clock->Now() - start < absl::Seconds(1)) {
      status = absl::UnavailableError("watch ended immediately without events");
    }
    if (status.ok()) {
      // A finished list or a watch the server closed on time: go on at once.
      listed = true;
      failures = 0;
      continue;
    }
    {
      absl::MutexLock lock(&mu_);
      ++stats_.failures;
      if (IsGone(status)) ++stats_.gone;
      last_error_ = status;
    }
    if (IsGone(status)) {
      // The version we hold is compacted away: only a fresh list can resynchronise.
      listed = false;
      failures = 0;
      continue;
    }
    // The API server may be restarting: wait, then resume the watch from the last version (or
    // retry the list). The resumed watch replays every change made meanwhile.
    if (!options_.clock->SleepFor(BackoffDelay(options_.backoff, failures++, random), stop)) {
      break;
    }
  }
}

}  // namespace gpuop::kube
