#ifndef GPUOP_OPERATOR_OPERANDS_POOL_STATUS_H_
#define GPUOP_OPERATOR_OPERANDS_POOL_STATUS_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/time/time.h"
#include "operator/api/node_pool.h"
#include "operator/cache/cache.h"

namespace gpuop::op {

// The status of every valid pool, by pool name: observedGeneration, nodes (managed GPU nodes it
// selects), conflicts (those nodes another pool selects too, which keep their current
// configuration) and the conditions Conflict (True naming the nodes and the other pools) and
// Ready (True when the pool selects nodes without conflict). `previous` holds each pool's
// current conditions, so unchanged ones keep their lastTransitionTime. Pure.
std::map<std::string, nlohmann::json> ComputePoolStatuses(
    const std::vector<NodePool>& pools, const std::vector<std::shared_ptr<const NodeEntry>>& nodes,
    const std::map<std::string, nlohmann::json>& previous, absl::Time now);

}  // namespace gpuop::op

#endif  // GPUOP_OPERATOR_OPERANDS_POOL_STATUS_H_
