#ifndef GPUOP_KUBE_TYPES_OBJECT_META_H_
#define GPUOP_KUBE_TYPES_OBJECT_META_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "kube/types/labels.h"

namespace gpuop::kube {

struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  bool controller = false;
};

// The metadata fields controllers read. managedFields and the rest are left out.
struct ObjectMeta {
  std::string name;
  std::string namespace_;
  std::string uid;
  std::string resource_version;
  int64_t generation = 0;
  absl::Time creation_timestamp = absl::InfinitePast();
  std::optional<absl::Time> deletion_timestamp;
  Labels labels;
  Labels annotations;
  std::vector<OwnerReference> owner_references;
  std::vector<std::string> finalizers;

  // "namespace/name" or "name".
  std::string Key() const;
  const OwnerReference* ControllerRef() const;
};

// Which annotations a trimmed object keeps: all, none, or those whose key starts with one of
// the prefixes.
struct AnnotationFilter {
  bool keep_all = true;
  std::vector<std::string> prefixes;

  static AnnotationFilter All() { return {}; }
  static AnnotationFilter None() { return {.keep_all = false}; }
  static AnnotationFilter Prefixes(std::vector<std::string> p) {
    return {.keep_all = false, .prefixes = std::move(p)};
  }
};

// Reads metadata from an object's JSON. InvalidArgument names the field when it has the wrong
// type.
[[nodiscard]] absl::StatusOr<ObjectMeta> ParseObjectMeta(
    const nlohmann::json& object, const AnnotationFilter& annotations = AnnotationFilter::All());

// RFC 3339 timestamps as the API server writes them ("2026-01-02T03:04:05Z", and MicroTime
// with fractional seconds).
[[nodiscard]] absl::StatusOr<absl::Time> ParseTimestamp(absl::string_view text);
std::string FormatTimestamp(absl::Time time);       // seconds precision
std::string FormatMicroTimestamp(absl::Time time);  // microseconds, for MicroTime fields

// A status condition (metav1.Condition and the older per-type conditions alike).
struct Condition {
  std::string type;
  std::string status;  // "True", "False", "Unknown"
  std::string reason;
  std::string message;
  absl::Time last_transition_time = absl::InfinitePast();
  int64_t observed_generation = 0;
};

std::vector<Condition> ParseConditions(const nlohmann::json& list);
const Condition* FindCondition(const std::vector<Condition>& conditions, absl::string_view type);

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_TYPES_OBJECT_META_H_
