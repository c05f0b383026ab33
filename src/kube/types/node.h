#ifndef GPUOP_KUBE_TYPES_NODE_H_
#define GPUOP_KUBE_TYPES_NODE_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "kube/types/labels.h"
#include "kube/types/object_meta.h"

namespace gpuop::kube {

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule, PreferNoSchedule, NoExecute
  friend bool operator==(const Taint&, const Taint&) = default;
};

// A Node as the controllers see it: identity, labels, gpuop's annotations, schedulability,
// conditions, resources and versions. Images, addresses, managedFields and the rest of the
// status are left out; they are most of a Node's size.
struct Node {
  ObjectMeta metadata;
  bool unschedulable = false;
  std::vector<Taint> taints;
  std::vector<Condition> conditions;
  Labels capacity;     // resource name -> quantity
  Labels allocatable;  // resource name -> quantity
  std::string kernel_version;
  std::string os_image;
  std::string container_runtime_version;
  std::string kubelet_version;

  bool Ready() const;
};

// Builds a Node from JSON. `annotations` selects which annotations to keep (gpuop's own by
// default).
[[nodiscard]] absl::StatusOr<Node> ParseNode(
    const nlohmann::json& object,
    const AnnotationFilter& annotations = AnnotationFilter::Prefixes({"gpuop.io/"}));

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_TYPES_NODE_H_
