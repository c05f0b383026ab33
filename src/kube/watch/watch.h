#ifndef GPUOP_KUBE_WATCH_WATCH_H_
#define GPUOP_KUBE_WATCH_WATCH_H_

#include <functional>
#include <stop_token>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "kube/client/client.h"

namespace gpuop::kube {

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark };

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  // The object; for a bookmark only its kind and metadata.resourceVersion.
  Json object;
};

struct WatchOptions {
  // Events after this version; "" starts from the most recent state (no ADDED replay).
  std::string resource_version;
  std::string label_selector;
  std::string field_selector;
  // Ask the server for periodic bookmarks so a resumed watch starts from a recent version.
  bool allow_bookmarks = true;
  bool metadata_only = false;
  // The server ends the watch after this long (a normal end); the caller then resumes.
  absl::Duration server_timeout = absl::Minutes(5);
};

// Handles one event; returns false to end the watch.
using WatchHandler = std::function<bool(WatchEvent event)>;

// Runs one watch request and hands each event to `handler` as it arrives.
//
// Returns OK when the stream ended normally (the server timeout, `handler` returned false, or
// `stop` was requested); OutOfRange (IsGone) when the requested resourceVersion is too old, as a
// 410 or an ERROR event, so the caller must relist; another error when the watch could not be
// opened or broke. Resuming from the last seen version is the caller's job (see Reflector).
[[nodiscard]] absl::Status WatchOnce(Client& client, const ResourceType& type, absl::string_view ns,
                                     const WatchOptions& options, const WatchHandler& handler,
                                     std::stop_token stop);

// Splits a byte stream into newline-terminated lines (the watch framing: one JSON object per
// line). Not thread-safe.
class LineSplitter {
 public:
  // Appends `data` and calls `on_line` for each complete line, without its newline. Stops early
  // and returns false when `on_line` returns false.
  bool Feed(absl::string_view data, const std::function<bool(absl::string_view)>& on_line);
  // Bytes of an unfinished line.
  size_t pending() const { return buffer_.size() - start_; }

 private:
  std::string buffer_;
  size_t start_ = 0;
};

// Decodes one watch event line. A Status event of type ERROR becomes its error (OutOfRange for a
// 410); an unknown type is an error.
[[nodiscard]] absl::StatusOr<WatchEvent> ParseWatchEvent(absl::string_view line,
                                                         absl::string_view what);

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_WATCH_WATCH_H_
