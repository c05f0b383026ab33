#ifndef GPUOP_OPERATOR_NODES_POD_ACTIONS_H_
#define GPUOP_OPERATOR_NODES_POD_ACTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kube/client/client.h"

namespace gpuop::op {

// A pod the operator acts on.
struct PodRef {
  std::string ns;
  std::string name;
  std::string uid;  // "" when unknown: no precondition
  friend bool operator==(const PodRef&, const PodRef&) = default;
};

// Deletes `pods` (with `grace_seconds` when set, else each pod's own; a UID, when known, is a
// precondition so a pod recreated under the same name is spared). A pod already gone counts as
// deleted. Returns what did not work, in words ("deleting pod ns/p failed: ...").
std::vector<std::string> DeletePods(kube::Client& client, const std::vector<PodRef>& pods,
                                    std::optional<int64_t> grace_seconds);

// Evicts `pods` through the eviction API, so PodDisruptionBudgets apply. A pod already gone
// counts as evicted. Returns what did not work, in words, a blocked eviction as "eviction of pod
// ns/p is blocked by a PodDisruptionBudget: <the server's reason>".
std::vector<std::string> EvictPods(kube::Client& client, const std::vector<PodRef>& pods);

}  // namespace gpuop::op

#endif  // GPUOP_OPERATOR_NODES_POD_ACTIONS_H_
