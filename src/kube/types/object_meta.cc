#include "kube/types/object_meta.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kube/types/json_fields.h"

namespace gpuop::kube {
namespace {

using nlohmann::json;

absl::Status WrongType(absl::string_view field, absl::string_view want) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": must be ", want));
}

absl::StatusOr<std::string> OptString(const json& obj, const char* key, absl::string_view field) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::string();
  if (!it->is_string()) return WrongType(absl::StrCat(field, ".", key), "a string");
  return it->get<std::string>();
}

}  // namespace

std::string ObjectMeta::Key() const {
  return namespace_.empty() ? name : absl::StrCat(namespace_, "/", name);
}

const OwnerReference* ObjectMeta::ControllerRef() const {
  for (const auto& ref : owner_references) {
    if (ref.controller) return &ref;
  }
  return nullptr;
}

absl::StatusOr<absl::Time> ParseTimestamp(absl::string_view text) {
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, text, &t, &err)) {
    return absl::InvalidArgumentError(absl::StrCat("timestamp \"", text, "\": ", err));
  }
  return t;
}

std::string FormatTimestamp(absl::Time time) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", time, absl::UTCTimeZone());
}

std::string FormatMicroTimestamp(absl::Time time) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", time, absl::UTCTimeZone());
}

absl::StatusOr<ObjectMeta> ParseObjectMeta(const json& object,
                                           const AnnotationFilter& annotations) {
  auto it = object.find("metadata");
  if (it == object.end() || !it->is_object()) return WrongType("metadata", "an object");
  const json& m = *it;
  ObjectMeta meta;
  GPUOP_ASSIGN_OR_RETURN(meta.name, OptString(m, "name", "metadata"));
  GPUOP_ASSIGN_OR_RETURN(meta.namespace_, OptString(m, "namespace", "metadata"));
  GPUOP_ASSIGN_OR_RETURN(meta.uid, OptString(m, "uid", "metadata"));
  GPUOP_ASSIGN_OR_RETURN(meta.resource_version, OptString(m, "resourceVersion", "metadata"));
  meta.generation = IntField(m, "generation");
  GPUOP_ASSIGN_OR_RETURN(std::string created, OptString(m, "creationTimestamp", "metadata"));
  if (!created.empty()) {
    GPUOP_ASSIGN_OR_RETURN(meta.creation_timestamp, ParseTimestamp(created));
  }
  GPUOP_ASSIGN_OR_RETURN(std::string deleted, OptString(m, "deletionTimestamp", "metadata"));
  if (!deleted.empty()) {
    GPUOP_ASSIGN_OR_RETURN(meta.deletion_timestamp, ParseTimestamp(deleted));
  }
  if (auto l = m.find("labels"); l != m.end()) {
    if (!l->is_object() && !l->is_null()) return WrongType("metadata.labels", "an object");
    meta.labels = Labels::FromJson(*l);
  }
  if (auto a = m.find("annotations"); a != m.end() && a->is_object()) {
    if (annotations.keep_all) {
      meta.annotations = Labels::FromJson(*a);
    } else if (!annotations.prefixes.empty()) {
      json kept = json::object();
      for (const auto& [key, value] : a->items()) {
        for (const auto& prefix : annotations.prefixes) {
          if (absl::StartsWith(key, prefix)) {
            kept[key] = value;
            break;
          }
        }
      }
      meta.annotations = Labels::FromJson(kept);
    }
  }
  if (auto refs = m.find("ownerReferences"); refs != m.end() && refs->is_array()) {
    for (const auto& r : *refs) {
      meta.owner_references.push_back({.api_version = StringField(r, "apiVersion"),
                                       .kind = StringField(r, "kind"),
                                       .name = StringField(r, "name"),
                                       .uid = StringField(r, "uid"),
                                       .controller = BoolField(r, "controller")});
    }
  }
  if (auto f = m.find("finalizers"); f != m.end() && f->is_array()) {
    for (const auto& v : *f) {
      if (v.is_string()) meta.finalizers.push_back(v.get<std::string>());
    }
  }
  return meta;
}

std::vector<Condition> ParseConditions(const json& list) {
  std::vector<Condition> out;
  if (!list.is_array()) return out;
  for (const auto& c : list) {
    if (!c.is_object()) continue;
    Condition cond{.type = StringField(c, "type"),
                   .status = StringField(c, "status"),
                   .reason = StringField(c, "reason"),
                   .message = StringField(c, "message"),
                   .observed_generation = IntField(c, "observedGeneration")};
    if (auto t = ParseTimestamp(StringField(c, "lastTransitionTime")); t.ok()) {
      cond.last_transition_time = *t;
    }
    out.push_back(std::move(cond));
  }
  return out;
}

const Condition* FindCondition(const std::vector<Condition>& conditions, absl::string_view type) {
  for (const auto& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

}  // namespace gpuop::kube
