#ifndef GPUOP_OPERATOR_NODES_GPU_NODE_STATUS_H_
#define GPUOP_OPERATOR_NODES_GPU_NODE_STATUS_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/types/node.h"
#include "operator/api/policy.h"

namespace gpuop::op {

// A component's pod on a node, as the GPUNode reports it.
struct ComponentState {
  std::string name;   // "device-plugin"
  std::string state;  // Ready, NotReady, Paused, Disabled, Skipped
  std::string message;
};

// The GPUNode for `node` (its status is written separately): named after the node and owned by
// it, so it goes when the Node goes.
nlohmann::json GpuNodeObject(const kube::Node& node);

// The GPUNode's status from what the cluster says about the node: the agent's labels and
// inventory annotation, its GPUHealthy and Ready conditions, the upgrade and remediation state
// the operator keeps on the node, and the components' pods. `policy` may be null.
// `driver_target` is the driver version the node's pool runs (the pool's, else the policy's):
// upgrade.targetVersion while an upgrade state is set.
nlohmann::json GpuNodeStatus(const kube::Node& node, const PolicySpec* policy,
                             const std::string& pool, const std::vector<ComponentState>& components,
                             const std::string& driver_target = "");

}  // namespace gpuop::op

#endif  // GPUOP_OPERATOR_NODES_GPU_NODE_STATUS_H_
