#include "kube/types/pod.h"

#include "common/status_macros.h"
#include "kube/types/json_fields.h"

namespace gpuop::kube {

bool Pod::Ready() const {
  const Condition* ready = FindCondition(conditions, "Ready");
  return ready != nullptr && ready->status == "True";
}

bool Pod::Requests(absl::string_view resource) const {
  for (const auto& c : containers) {
    auto limit = c.limits.Get(resource);
    if (limit.has_value() && *limit != "0") return true;
  }
  return false;
}

absl::StatusOr<Pod> ParsePod(const nlohmann::json& object, const AnnotationFilter& annotations) {
  Pod pod;
  GPUOP_ASSIGN_OR_RETURN(pod.metadata, ParseObjectMeta(object, annotations));
  const nlohmann::json& spec = Field(object, "spec");
  pod.node_name = StringField(spec, "nodeName");
  const nlohmann::json& containers = Field(spec, "containers");
  if (containers.is_array()) {
    for (const auto& c : containers) {
      pod.containers.push_back(
          {.name = StringField(c, "name"),
           .image = StringField(c, "image"),
           .limits = Labels::FromJson(Field(Field(c, "resources"), "limits"))});
    }
  }
  const nlohmann::json& status = Field(object, "status");
  pod.phase = StringField(status, "phase");
  pod.conditions = ParseConditions(Field(status, "conditions"));
  const nlohmann::json& statuses = Field(status, "containerStatuses");
  if (statuses.is_array()) {
    for (const auto& s : statuses)
      pod.restart_count += static_cast<int32_t>(IntField(s, "restartCount"));
  }
  return pod;
}

}  // namespace gpuop::kube
