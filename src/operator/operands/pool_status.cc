#include "operator/operands/pool_status.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "operator/operands/policy_status.h"
#include "operator/render/render.h"

namespace gpuop::op {

std::map<std::string, nlohmann::json> ComputePoolStatuses(
    const std::vector<NodePool>& pools, const std::vector<std::shared_ptr<const NodeEntry>>& nodes,
    const std::map<std::string, nlohmann::json>& previous, absl::Time now) {
  // Which pools select each managed node.
  std::map<std::string, std::vector<std::string>> pools_of;
  for (const auto& entry : nodes) {
    const kube::Node& node = entry->node;
    if (node.metadata.labels.Get(kManagedLabel) != std::optional<absl::string_view>("true"))
      continue;
    for (const NodePool& pool : pools) {
      if (pool.node_selector.Matches(node.metadata.labels)) {
        pools_of[node.metadata.name].push_back(pool.name);
      }
    }
  }
  std::map<std::string, nlohmann::json> out;
  for (const NodePool& pool : pools) {
    int64_t selected = 0;
    std::vector<std::string> conflicts;
    std::set<std::string> others;
    for (const auto& [node, names] : pools_of) {
      if (std::find(names.begin(), names.end(), pool.name) == names.end()) continue;
      ++selected;
      if (names.size() < 2) continue;
      conflicts.push_back(node);
      for (const auto& n : names) {
        if (n != pool.name) others.insert(n);
      }
    }
    const auto prev = previous.find(pool.name);
    const nlohmann::json prev_conditions =
        prev != previous.end() ? prev->second : nlohmann::json::array();
    nlohmann::json conditions = nlohmann::json::array();
    if (conflicts.empty()) {
      SetCondition(conditions, prev_conditions, "Conflict", false, "NoOverlap", "", pool.generation,
                   now);
      SetCondition(conditions, prev_conditions, "Ready", selected > 0,
                   selected > 0 ? "NodesSelected" : "NoNodes",
                   selected > 0 ? absl::StrCat(selected, " GPU nodes use this pool")
                                : "the node selector matches no GPU node",
                   pool.generation, now);
    } else {
      const std::string message = absl::StrCat(
          conflicts.size(), " nodes are also selected by ", absl::StrJoin(others, ", "), " (",
          absl::StrJoin(conflicts.begin(),
                        conflicts.begin() + std::min<size_t>(conflicts.size(), 5), ", "),
          conflicts.size() > 5 ? ", ..." : "", "); they keep their current configuration");
      SetCondition(conditions, prev_conditions, "Conflict", true, "OverlappingPools", message,
                   pool.generation, now);
      SetCondition(conditions, prev_conditions, "Ready", false, "OverlappingPools", message,
                   pool.generation, now);
    }
    out[pool.name] = {{"observedGeneration", pool.generation},
                      {"nodes", selected},
                      {"conflicts", conflicts},
                      {"conditions", conditions}};
  }
  return out;
}

}  // namespace gpuop::op
