#ifndef GPUOP_OPERATOR_OPERANDS_POLICY_STATUS_H_
#define GPUOP_OPERATOR_OPERANDS_POLICY_STATUS_H_

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "kube/types/daemon_set.h"
#include "kube/types/node.h"
#include "operator/api/node_pool.h"
#include "operator/api/policy.h"
#include "operator/cache/cache.h"

namespace gpuop::op {

// Everything the GPUClusterPolicy status is computed from: a snapshot of the cache and of the
// last operand sync.
struct PolicyStatusInput {
  int64_t generation = 0;
  // The spec as parsed, or why it could not be (then nothing is applied or pruned).
  absl::StatusOr<PolicySpec> spec = absl::UnknownError("unset");
  std::vector<NodePool> pools;
  // The nodes' gpuop.io/driver.os values per driver pool (RenderInput::driver_os).
  std::map<std::string, std::set<std::string>> driver_os;
  // The last sync's failures ("apply DaemonSet gpuop-system/gpuop-exporter: ...").
  std::vector<std::string> apply_errors;
  std::vector<std::shared_ptr<const kube::DaemonSet>> daemon_sets;  // the operator's namespace
  std::vector<std::shared_ptr<const OperandPod>> pods;
  std::vector<std::shared_ptr<const NodeEntry>> nodes;  // every Node
  // The current status's conditions, so unchanged ones keep their lastTransitionTime.
  nlohmann::json previous_conditions = nlohmann::json::array();
  absl::Time now;
};

// The status the policy should have:
//   observedGeneration;
//   nodes {total, ready, upgrading, remediating, unhealthy} over managed GPU nodes;
//   components [{name, desired, ready, updated, unavailable}] per enabled component (the
//     driver summed over its pools' DaemonSets);
//   conditions:
//     Ready       True  AllComponentsReady   | False naming the first component not ready and
//                                              the nodes where it is not (InvalidSpec, ApplyFailed,
//                                              ComponentNotReady, NoGPUNodes is True)
//     Progressing True  RollingOut / DriverUpgrade naming the component and counts | False Stable
//     Degraded    True  InvalidSpec / ApplyFailed / ComponentFailing (a pod not ready with >= 3
//                       restarts, naming pod and node) / UpgradeFailed (nodes in upgrade-failed)
//                       / RemediationFailed (nodes whose remediation failed or is exhausted)
//                       | False AsExpected
// Pure and deterministic.
nlohmann::json ComputePolicyStatus(const PolicyStatusInput& input);

// Sets a condition in a status conditions list, keeping lastTransitionTime when the status did
// not change. Shared with the pool status.
void SetCondition(nlohmann::json& conditions, const nlohmann::json& previous,
                  const std::string& type, bool status, const std::string& reason,
                  const std::string& message, int64_t generation, absl::Time now);

// The DaemonSets of `component`: gpuop-<component>, and for the driver those DriverSets names
// (one per pool that sets its own driver, and per OS and kernel when the image depends on the
// node).
std::vector<std::string> ComponentDaemonSets(
    Component component, const PolicySpec& spec, const std::vector<NodePool>& pools,
    const std::map<std::string, std::set<std::string>>& driver_os);

}  // namespace gpuop::op

#endif  // GPUOP_OPERATOR_OPERANDS_POLICY_STATUS_H_
