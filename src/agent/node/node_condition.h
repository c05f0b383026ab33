#ifndef GPUOP_AGENT_NODE_NODE_CONDITION_H_
#define GPUOP_AGENT_NODE_NODE_CONDITION_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kube/client/client.h"
#include "kube/types/object_meta.h"

namespace gpuop::agent {

// Sets one condition of a Node's status with a strategic-merge patch of the status subresource
// (conditions merge by type, so the kubelet's and others' stay as they are). The message is cut
// to 1024 bytes. `condition.last_transition_time` is written as given; lastHeartbeatTime is
// `heartbeat`.
[[nodiscard]] absl::Status PatchNodeCondition(kube::Client& client, const std::string& node,
                                              const kube::Condition& condition,
                                              absl::Time heartbeat);
// The same for several conditions in one patch, so that a reader never sees some of them
// changed and not the others (GPUHealthy and GPURecoveryAction say one thing together).
[[nodiscard]] absl::Status PatchNodeConditions(kube::Client& client, const std::string& node,
                                               const std::vector<kube::Condition>& conditions,
                                               absl::Time heartbeat);

// The Node's condition of `type` as the API server has it; NotFound when the Node has none.
[[nodiscard]] absl::StatusOr<kube::Condition> GetNodeCondition(kube::Client& client,
                                                               const std::string& node,
                                                               const std::string& type);

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_NODE_NODE_CONDITION_H_
