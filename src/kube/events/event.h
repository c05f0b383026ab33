#ifndef GPUOP_KUBE_EVENTS_EVENT_H_
#define GPUOP_KUBE_EVENTS_EVENT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace gpuop::kube {

// The object an event is about (events.k8s.io/v1 `regarding`, `related`).
struct ObjectReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string namespace_;  // "" for cluster-scoped objects (Nodes)
  std::string uid;
  std::string resource_version;

  nlohmann::json ToJson() const;
  // Identifies the object (not its version): "apiVersion/kind/namespace/name/uid".
  std::string Key() const;
};

// The reference to an API object, from its apiVersion, kind and metadata. Missing fields stay
// empty.
ObjectReference ReferenceTo(const nlohmann::json& object);

enum class EventType { kNormal, kWarning };

// "Normal" or "Warning".
absl::string_view EventTypeName(EventType type);

// What happened, as a caller reports it.
struct EventDetails {
  ObjectReference regarding;
  std::optional<ObjectReference> related;
  EventType type = EventType::kNormal;
  // Why, in UpperCamelCase ("DriverReady"); at most kMaxReasonBytes.
  std::string reason;
  // What was done or failed ("InstallDriver"); at most kMaxActionBytes.
  std::string action;
  // For people; at most kMaxNoteBytes.
  std::string note;
};

// The API server's limits (k8s.io/kubernetes/pkg/apis/core/validation).
inline constexpr size_t kMaxNoteBytes = 1024;
inline constexpr size_t kMaxReasonBytes = 128;
inline constexpr size_t kMaxActionBytes = 128;
inline constexpr size_t kMaxReportingBytes = 128;

// `text` cut to at most `max_bytes` bytes at a UTF-8 character boundary, ending in "..." when
// it was cut.
std::string Truncate(absl::string_view text, size_t max_bytes);

// The Event's name: "<regarding name>.<16 hex digits of `unique`>", the regarding name made a
// valid DNS subdomain prefix and shortened so the whole stays within 253 characters.
std::string EventName(absl::string_view regarding_name, uint64_t unique);

// The namespace an event about `regarding` lives in: the object's own, or "default" for
// cluster-scoped objects (the API server accepts only "default" or "kube-system" for those).
std::string EventNamespace(const ObjectReference& regarding);

// The events.k8s.io/v1 Event to create. `details` are already within the limits.
nlohmann::json EventObject(const EventDetails& details, absl::string_view name,
                           absl::string_view ns, absl::Time event_time,
                           absl::string_view reporting_controller,
                           absl::string_view reporting_instance);

// The Event's `series` field: {count, lastObservedTime}.
nlohmann::json EventSeries(int64_t count, absl::Time last_observed);

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_EVENTS_EVENT_H_
