#include "kube/watch/watch.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace gpuop::kube {

bool LineSplitter::Feed(absl::string_view data,
                        const std::function<bool(absl::string_view)>& on_line) {
  buffer_.append(data.data(), data.size());
  while (true) {
    const size_t newline = buffer_.find('\n', start_);
    if (newline == std::string::npos) break;
    absl::string_view line(buffer_.data() + start_, newline - start_);
    start_ = newline + 1;
    if (!line.empty() && !on_line(line)) return false;
  }
  // Compact once the consumed prefix dominates, so the buffer stays about one line long.
  if (start_ > 0 && start_ * 2 >= buffer_.size()) {
    buffer_.erase(0, start_);
    start_ = 0;
  }
  return true;
}

absl::StatusOr<WatchEvent> ParseWatchEvent(absl::string_view line, absl::string_view what) {
  Json event = Json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (!event.is_object()) {
    return absl::DataLossError(absl::StrCat(what, ": watch event is not a JSON object"));
  }
  const std::string type = event.value("type", "");
  auto object = event.find("object");
  if (object == event.end() || !object->is_object()) {
    return absl::DataLossError(absl::StrCat(what, ": watch event ", type, " has no object"));
  }
  WatchEvent out;
  if (type == "ADDED") {
    out.type = WatchEventType::kAdded;
  } else if (type == "MODIFIED") {
    out.type = WatchEventType::kModified;
  } else if (type == "DELETED") {
    out.type = WatchEventType::kDeleted;
  } else if (type == "BOOKMARK") {
    out.type = WatchEventType::kBookmark;
  } else if (type == "ERROR") {
    const int code = object->value("code", 500);
    return ApiError(what, code, object->dump());
  } else {
    return absl::DataLossError(absl::StrCat(what, ": unknown watch event type \"", type, "\""));
  }
  out.object = std::move(*object);
  return out;
}

absl::Status WatchOnce(Client& client, const ResourceType& type, absl::string_view ns,
                       const WatchOptions& options, const WatchHandler& handler,
                       std::stop_token stop) {
  const std::string what =
      absl::StrCat("watch ", type.plural, ns.empty() || !type.namespaced ? "" : " in ", ns);
  const int64_t server_seconds = std::max<int64_t>(1, absl::ToInt64Seconds(options.server_timeout));
  const std::string query =
      QueryString({{"watch", "true"},
                   {"resourceVersion", options.resource_version},
                   {"labelSelector", options.label_selector},
                   {"fieldSelector", options.field_selector},
                   {"allowWatchBookmarks", options.allow_bookmarks ? "true" : ""},
                   {"timeoutSeconds", absl::StrCat(server_seconds)}});
  LineSplitter lines;
  absl::Status event_error;
  auto on_line = [&](absl::string_view line) {
    absl::StatusOr<WatchEvent> event = ParseWatchEvent(line, what);
    if (!event.ok()) {
      event_error = event.status();
      return false;
    }
    return handler(*std::move(event));
  };
  GPUOP_ASSIGN_OR_RETURN(
      HttpResponse response,
      client.rest().Stream(
          {.path = type.CollectionPath(type.namespaced ? ns : "") + query,
           .accept = options.metadata_only ? kAcceptMetadata : "application/json",
           // The server ends the stream first; this only catches a stream that went silent.
           .timeout = options.server_timeout + absl::Seconds(30)},
          [&](absl::string_view data) { return lines.Feed(data, on_line); }, stop));
  if (stop.stop_requested()) return absl::OkStatus();
  if (response.status < 200 || response.status >= 300) {
    return ApiError(what, response.status, response.body);
  }
  return event_error;
}

}  // namespace gpuop::kube
