#include "kube/types/node.h"

#include "common/status_macros.h"
#include "kube/types/json_fields.h"

namespace gpuop::kube {

bool Node::Ready() const {
  const Condition* ready = FindCondition(conditions, "Ready");
  return ready != nullptr && ready->status == "True";
}

absl::StatusOr<Node> ParseNode(const nlohmann::json& object, const AnnotationFilter& annotations) {
  Node node;
  GPUOP_ASSIGN_OR_RETURN(node.metadata, ParseObjectMeta(object, annotations));
  const nlohmann::json& spec = Field(object, "spec");
  node.unschedulable = BoolField(spec, "unschedulable");
  const nlohmann::json& taints = Field(spec, "taints");
  if (taints.is_array()) {
    for (const auto& t : taints) {
      node.taints.push_back({.key = StringField(t, "key"),
                             .value = StringField(t, "value"),
                             .effect = StringField(t, "effect")});
    }
  }
  const nlohmann::json& status = Field(object, "status");
  node.conditions = ParseConditions(Field(status, "conditions"));
  node.capacity = Labels::FromJson(Field(status, "capacity"));
  node.allocatable = Labels::FromJson(Field(status, "allocatable"));
  const nlohmann::json& info = Field(status, "nodeInfo");
  node.kernel_version = StringField(info, "kernelVersion");
  node.os_image = StringField(info, "osImage");
  node.container_runtime_version = StringField(info, "containerRuntimeVersion");
  node.kubelet_version = StringField(info, "kubeletVersion");
  return node;
}

}  // namespace gpuop::kube
