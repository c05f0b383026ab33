#ifndef GPUOP_OPERATOR_UNINSTALL_NODE_CLEANUP_H_
#define GPUOP_OPERATOR_UNINSTALL_NODE_CLEANUP_H_

// What `gpuop-operator uninstall` takes off a Node: everything gpuop put on it.

#include <optional>

#include <nlohmann/json.hpp>

namespace gpuop::op::uninstall {

// The JSON merge patch that removes from `node`
//   - every label under gpuop.io/, and every label a gpuop field manager (gpuop-operator,
//     gpuop-agent-*) owns in metadata.managedFields (the GPU feature labels nvidia.com/...,
//     amd.com/...);
//   - every annotation under gpuop.io/;
//   - every taint whose key is under gpuop.io/ (remediation's, the GPU startup taint);
//   - the cordon gpuop made: spec.unschedulable goes false when the node carries an upgrade or
//     remediation state label and was not cordoned before gpuop touched it
//     (gpuop.io/cordoned-before).
// nullopt when there is nothing to remove. Reads only what is there: a malformed field is left
// alone, never an exception.
std::optional<nlohmann::json> NodeCleanupPatch(const nlohmann::json& node);

}  // namespace gpuop::op::uninstall

#endif  // GPUOP_OPERATOR_UNINSTALL_NODE_CLEANUP_H_
