#ifndef GPUOP_KUBE_TYPES_POD_H_
#define GPUOP_KUBE_TYPES_POD_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "kube/types/labels.h"
#include "kube/types/object_meta.h"

namespace gpuop::kube {

struct PodContainer {
  std::string name;
  std::string image;
  Labels limits;  // resource name -> quantity
};

// A Pod as the controllers see it: where it runs, its phase and readiness, and what it asks
// for.
struct Pod {
  ObjectMeta metadata;
  std::string node_name;
  std::string phase;  // Pending, Running, Succeeded, Failed, Unknown
  std::vector<Condition> conditions;
  std::vector<PodContainer> containers;
  int32_t restart_count = 0;  // sum over containers

  bool Ready() const;
  // Whether any container limits `resource` (e.g. "nvidia.com/gpu") above zero.
  bool Requests(absl::string_view resource) const;
};

[[nodiscard]] absl::StatusOr<Pod> ParsePod(
    const nlohmann::json& object,
    const AnnotationFilter& annotations = AnnotationFilter::Prefixes({"gpuop.io/"}));

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_TYPES_POD_H_
