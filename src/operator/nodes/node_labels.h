#ifndef GPUOP_OPERATOR_NODES_NODE_LABELS_H_
#define GPUOP_OPERATOR_NODES_NODE_LABELS_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "kube/types/node.h"
#include "operator/api/node_pool.h"
#include "operator/api/policy.h"

namespace gpuop::op {

// Node labels others write that the operator reads.
inline constexpr char kNfdNvidiaLabel[] = "feature.node.kubernetes.io/pci-10de.present";
inline constexpr char kNfdAmdLabel[] = "feature.node.kubernetes.io/pci-1002.present";
inline constexpr char kAgentGpuPresentLabel[] = "gpuop.io/gpu.present";  // the agent's discovery
// The agent found a driver already loaded on the host (not from gpuop's driver container).
inline constexpr char kDriverPreinstalledLabel[] = "gpuop.io/driver.preinstalled";
// "false" takes every component off the node.
inline constexpr char kDeployOperandsLabel[] = "gpuop.io/deploy.operands";
// The value of gpuop.io/deploy.driver on nodes whose host has its own driver.
inline constexpr char kHostDriverValue[] = "host-driver";
// The deploy label of an NVIDIA-only component (driver container, MIG manager) on a node whose
// GPUs are all AMD: the component does not apply there.
inline constexpr char kNotApplicableValue[] = "not-applicable";

// A GPU node: node feature discovery saw an NVIDIA or AMD PCI device, or the agent found GPUs.
bool IsGpuNode(const kube::Node& node);

// Which pool each GPU node belongs to. A node two or more pools select belongs to none of them
// and is listed as a conflict under each.
struct PoolAssignment {
  std::map<std::string, std::string> pool_of;                 // node -> pool
  std::map<std::string, std::vector<std::string>> conflicts;  // pool -> nodes
  std::map<std::string, int> members;                         // pool -> nodes (no conflicts)
  bool Conflicted(const std::string& node) const;
};
PoolAssignment AssignPools(const std::vector<const kube::Node*>& gpu_nodes,
                           const std::vector<NodePool>& pools);

// The time-slicing configuration name the operator generates for a pool.
std::string TimeSlicingConfigName(const std::string& pool);

// The labels the operator wants on a node, and the ones of its own to take off.
struct NodeLabelChange {
  std::map<std::string, std::string> desired;  // the operator's labels, as they should be
  bool needed = false;                         // the node differs from `desired`
};

// What the operator's labels on `node` should be:
//   gpuop.io/managed=true on GPU nodes the policy's nodeSelector admits;
//   gpuop.io/deploy.<component>=true for each enabled component, unless the node says otherwise
//     (a value other than "true" set by a person or another component: paused, false, ...),
//     gpuop.io/deploy.operands=false, or, for the driver, a host driver (host-driver);
//   gpuop.io/driver.pool, nvidia.com/device-plugin.config and nvidia.com/mig.config from the
//     node's pool. A node in conflict keeps the values it has.
// `policy` is null when there is no policy: the operator then takes its labels off.
// `owned` are the label keys the operator's field manager owns now (from managedFields); an owned
// key that is no longer desired makes the change needed (applying without it removes it).
NodeLabelChange DesiredNodeLabels(const kube::Node& node, const std::vector<std::string>& owned,
                                  const PolicySpec* policy, const NodePool* pool, bool conflicted);

// Whether DesiredNodeLabels decides `key`: gpuop.io/managed, gpuop.io/deploy.<component> and the
// pool-derived labels. The operator writes other labels as the same field manager (the upgrade
// and remediation state labels); they belong to their controllers, and node labelling must
// neither count them as its own nor drop them.
bool IsNodeLabellingKey(absl::string_view key);

// The label keys `manager` owns in an object's metadata.managedFields.
std::vector<std::string> OwnedLabelKeys(const nlohmann::json& object, const std::string& manager);

}  // namespace gpuop::op

#endif  // GPUOP_OPERATOR_NODES_NODE_LABELS_H_
