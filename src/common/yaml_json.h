#ifndef GPUOP_COMMON_YAML_JSON_H_
#define GPUOP_COMMON_YAML_JSON_H_

#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpuop::common {

// The documents of a YAML stream ("---"-separated) as JSON, for Kubernetes manifests. Scalars
// follow the YAML 1.2 core schema: quoted scalars are strings; plain ones are null, booleans
// (true/false), integers and floats when they look like one, strings otherwise. Empty documents
// are skipped. InvalidArgument with the line and column when the YAML is malformed.
[[nodiscard]] absl::StatusOr<std::vector<nlohmann::json>> YamlDocumentsToJson(
    absl::string_view yaml);

}  // namespace gpuop::common

#endif  // GPUOP_COMMON_YAML_JSON_H_
