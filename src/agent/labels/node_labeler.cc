#include "agent/labels/node_labeler.h"

#include "absl/strings/str_cat.h"

namespace gpuop::agent {

absl::Status NodeLabeler::Apply(const NodeLabels& labels, const NodeLabels& annotations) {
  if (last_.has_value() && last_->first == labels && last_->second == annotations) {
    return absl::OkStatus();
  }
  if (!last_.has_value()) {
    // An apply creates what does not exist; the agent must never create a Node.
    absl::StatusOr<kube::Json> node =
        client_.Get(kube::resources::kNodes, "", node_name_, {.metadata_only = true});
    if (!node.ok()) {
      return absl::Status(node.status().code() == absl::StatusCode::kNotFound
                              ? absl::StatusCode::kFailedPrecondition
                              : node.status().code(),
                          absl::StrCat("label node ", node_name_, ": ", node.status().message()));
    }
  }
  kube::Json object = {{"apiVersion", "v1"},
                       {"kind", "Node"},
                       {"metadata", {{"name", node_name_}, {"labels", kube::Json::object()}}}};
  for (const auto& [key, value] : labels) object["metadata"]["labels"][key] = value;
  for (const auto& [key, value] : annotations) object["metadata"]["annotations"][key] = value;
  ++applies_;
  absl::StatusOr<kube::Json> applied =
      client_.Apply(kube::resources::kNodes, object, kFieldManager, /*force=*/true);
  if (!applied.ok()) {
    return absl::Status(applied.status().code(),
                        absl::StrCat("label node ", node_name_, ": ", applied.status().message()));
  }
  last_ = {labels, annotations};
  return absl::OkStatus();
}

}  // namespace gpuop::agent
