#include "kube/events/event.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kube/types/json_fields.h"
#include "kube/types/object_meta.h"

namespace gpuop::kube {
namespace {

constexpr size_t kMaxNameBytes = 253;
constexpr char kEllipsis[] = "...";

bool IsContinuationByte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

}  // namespace

ObjectReference ReferenceTo(const nlohmann::json& object) {
  const nlohmann::json& metadata = Field(object, "metadata");
  return {.api_version = StringField(object, "apiVersion"),
          .kind = StringField(object, "kind"),
          .name = StringField(metadata, "name"),
          .namespace_ = StringField(metadata, "namespace"),
          .uid = StringField(metadata, "uid"),
          .resource_version = StringField(metadata, "resourceVersion")};
}

nlohmann::json ObjectReference::ToJson() const {
  nlohmann::json ref = {{"apiVersion", api_version}, {"kind", kind}, {"name", name}};
  if (!namespace_.empty()) ref["namespace"] = namespace_;
  if (!uid.empty()) ref["uid"] = uid;
  if (!resource_version.empty()) ref["resourceVersion"] = resource_version;
  return ref;
}

std::string ObjectReference::Key() const {
  return absl::StrCat(api_version, "/", kind, "/", namespace_, "/", name, "/", uid);
}

absl::string_view EventTypeName(EventType type) {
  return type == EventType::kWarning ? "Warning" : "Normal";
}

std::string Truncate(absl::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  const size_t ellipsis = sizeof(kEllipsis) - 1;
  if (max_bytes < ellipsis) return std::string(text.substr(0, max_bytes));
  size_t end = max_bytes - ellipsis;
  while (end > 0 && IsContinuationByte(text[end])) --end;
  return absl::StrCat(text.substr(0, end), kEllipsis);
}

std::string EventName(absl::string_view regarding_name, uint64_t unique) {
  const std::string suffix = absl::StrFormat(".%016x", unique);
  std::string prefix;
  prefix.reserve(regarding_name.size());
  for (char c : regarding_name) {
    c = absl::ascii_tolower(c);
    prefix += absl::ascii_isalnum(c) || c == '.' || c == '-' ? c : '-';
  }
  if (prefix.size() > kMaxNameBytes - suffix.size()) prefix.resize(kMaxNameBytes - suffix.size());
  // A DNS subdomain starts and ends with an alphanumeric character.
  while (!prefix.empty() && !absl::ascii_isalnum(prefix.back())) prefix.pop_back();
  size_t start = 0;
  while (start < prefix.size() && !absl::ascii_isalnum(prefix[start])) ++start;
  prefix.erase(0, start);
  if (prefix.empty()) prefix = "event";
  return prefix + suffix;
}

std::string EventNamespace(const ObjectReference& regarding) {
  return regarding.namespace_.empty() ? "default" : regarding.namespace_;
}

nlohmann::json EventObject(const EventDetails& details, absl::string_view name,
                           absl::string_view ns, absl::Time event_time,
                           absl::string_view reporting_controller,
                           absl::string_view reporting_instance) {
  nlohmann::json event = {
      {"apiVersion", "events.k8s.io/v1"},
      {"kind", "Event"},
      {"metadata", {{"name", std::string(name)}, {"namespace", std::string(ns)}}},
      {"eventTime", FormatMicroTimestamp(event_time)},
      {"reportingController", std::string(reporting_controller)},
      {"reportingInstance", std::string(reporting_instance)},
      {"action", details.action},
      {"reason", details.reason},
      {"type", std::string(EventTypeName(details.type))},
      {"regarding", details.regarding.ToJson()}};
  if (!details.note.empty()) event["note"] = details.note;
  if (details.related) event["related"] = details.related->ToJson();
  return event;
}

nlohmann::json EventSeries(int64_t count, absl::Time last_observed) {
  return {{"count", count}, {"lastObservedTime", FormatMicroTimestamp(last_observed)}};
}

}  // namespace gpuop::kube
