#include "agent/deviceplugin/allocation.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace gpuop::agent {
namespace {

// Pair scores on the scale of NVIDIA's best-effort allocator (go-gpuallocator): 100 per NVLink
// (or XGMI) link plus the PCIe path's score, so links decide first and, where every pair has
// the same links (an NVSwitch board), the PCIe path keeps a set on one socket.
constexpr int kPerFabricLink = 100;
constexpr int kPcieSwitchScore = 50;
constexpr int kNumaScore = 30;
constexpr int kCrossSocketScore = 10;

int PcieScore(hw::LinkKind kind) {
  switch (kind) {
    case hw::LinkKind::kSamePcieSwitch:
      return kPcieSwitchScore;
    case hw::LinkKind::kSameNumaNode:
      return kNumaScore;
    case hw::LinkKind::kGpuFabric:
    case hw::LinkKind::kCrossSocket:
      break;
  }
  return kCrossSocketScore;
}

// Sum of pairwise scores of the GPUs behind `chosen`.
int SetScore(const std::vector<const PluginDevice*>& chosen, const Topology& topology) {
  int score = 0;
  for (size_t i = 0; i < chosen.size(); ++i) {
    for (size_t j = i + 1; j < chosen.size(); ++j) {
      score += topology.Score(chosen[i]->gpu_index, chosen[j]->gpu_index);
    }
  }
  return score;
}

// Whole GPUs: greedy growth from every possible seed, keeping the best-connected result.
std::vector<const PluginDevice*> BestConnected(const std::vector<const PluginDevice*>& must,
                                               const std::vector<const PluginDevice*>& pool,
                                               size_t size, const Topology& topology) {
  auto grow = [&](std::vector<const PluginDevice*> chosen) {
    std::vector<bool> used(pool.size(), false);
    for (const auto* c : chosen) {
      for (size_t i = 0; i < pool.size(); ++i) used[i] = used[i] || pool[i] == c;
    }
    while (chosen.size() < size) {
      int best = -1;
      int best_gain = -1;
      for (size_t i = 0; i < pool.size(); ++i) {
        if (used[i]) continue;
        int gain = 0;
        for (const auto* c : chosen) gain += topology.Score(c->gpu_index, pool[i]->gpu_index);
        if (gain > best_gain) {
          best_gain = gain;
          best = static_cast<int>(i);
        }
      }
      if (best < 0) break;
      used[static_cast<size_t>(best)] = true;
      chosen.push_back(pool[static_cast<size_t>(best)]);
    }
    return chosen;
  };
  if (!must.empty()) return grow(must);
  std::vector<const PluginDevice*> best;
  int best_score = -1;
  for (const auto* seed : pool) {
    std::vector<const PluginDevice*> candidate = grow({seed});
    const int score = SetScore(candidate, topology);
    if (candidate.size() == size && score > best_score) {
      best_score = score;
      best = std::move(candidate);
    }
  }
  return best;
}

}  // namespace

Topology::Topology(const std::vector<hw::Gpu>& gpus) {
  int max_index = -1;
  for (const auto& g : gpus) max_index = std::max(max_index, g.index);
  score_.assign(static_cast<size_t>(max_index + 1),
                std::vector<int>(static_cast<size_t>(max_index + 1), 0));
  for (const auto& g : gpus) {
    for (const auto& link : g.links) {
      if (link.peer_index < 0 || link.peer_index > max_index) continue;
      // Without a fabric the link's kind is its PCIe path.
      int score = PcieScore(link.kind == hw::LinkKind::kGpuFabric ? link.pcie : link.kind);
      if (link.kind == hw::LinkKind::kGpuFabric) {
        score += kPerFabricLink * std::max(1, link.fabric_links);
      }
      score_[static_cast<size_t>(g.index)][static_cast<size_t>(link.peer_index)] = score;
    }
  }
}

int Topology::Score(int a, int b) const {
  if (a < 0 || b < 0 || static_cast<size_t>(a) >= score_.size() ||
      static_cast<size_t>(b) >= score_.size()) {
    return 0;
  }
  return score_[static_cast<size_t>(a)][static_cast<size_t>(b)];
}

std::vector<std::string> PreferredAllocation(const std::vector<PluginDevice>& devices,
                                             const Topology& topology,
                                             const std::vector<std::string>& available,
                                             const std::vector<std::string>& must_include,
                                             int size) {
  if (size <= 0) return {};
  absl::flat_hash_map<std::string, const PluginDevice*> by_id;
  for (const auto& d : devices) by_id[d.id] = &d;
  // IDs this plugin does not serve (a stale list after a re-registration) are skipped: the
  // kubelet fails the pod's admission on an error, but fills a short answer itself.
  std::set<std::string> seen;
  auto known = [&](const std::string& id) -> const PluginDevice* {
    auto it = by_id.find(id);
    if (it == by_id.end() || !seen.insert(id).second) return nullptr;
    return it->second;
  };
  std::vector<const PluginDevice*> must;
  for (const auto& id : must_include) {
    if (const PluginDevice* d = known(id)) must.push_back(d);
  }
  if (must.size() >= static_cast<size_t>(size)) {
    std::vector<std::string> ids;
    for (const auto* d : must) ids.push_back(d->id);
    return ids;
  }
  std::vector<const PluginDevice*> pool;
  for (const auto& id : available) {
    if (const PluginDevice* d = known(id)) pool.push_back(d);
  }
  std::sort(pool.begin(), pool.end(),
            [](const PluginDevice* a, const PluginDevice* b) { return a->id < b->id; });
  size = std::min(size, static_cast<int>(must.size() + pool.size()));

  std::vector<const PluginDevice*> chosen = must;
  const bool shared = !pool.empty() && pool.front()->replicas > 1;
  const bool mig = !pool.empty() && pool.front()->mig;
  if (shared || mig) {
    // Available devices per physical GPU: load and packing both read from it.
    std::map<int, int> free_on_gpu;
    for (const auto* d : pool) ++free_on_gpu[d->gpu_index];
    std::set<int> used_gpus;
    for (const auto* d : must) used_gpus.insert(d->gpu_index);
    while (chosen.size() < static_cast<size_t>(size)) {
      const PluginDevice* best = nullptr;
      for (const auto* d : pool) {
        if (std::find(chosen.begin(), chosen.end(), d) != chosen.end()) continue;
        if (best == nullptr) {
          best = d;
          continue;
        }
        if (shared) {
          // Spread: a GPU not used yet, then the least loaded (most free replicas).
          const bool d_new = !used_gpus.contains(d->gpu_index);
          const bool b_new = !used_gpus.contains(best->gpu_index);
          if (d_new != b_new) {
            if (d_new) best = d;
          } else if (free_on_gpu[d->gpu_index] > free_on_gpu[best->gpu_index]) {
            best = d;
          }
        } else if (free_on_gpu[d->gpu_index] < free_on_gpu[best->gpu_index]) {
          // Pack: the GPU with the fewest free MIG devices of this kind.
          best = d;
        }
      }
      chosen.push_back(best);
      used_gpus.insert(best->gpu_index);
      --free_on_gpu[best->gpu_index];
    }
  } else {
    chosen = BestConnected(must, pool, static_cast<size_t>(size), topology);
  }
  std::vector<std::string> ids;
  for (const auto* d : chosen) ids.push_back(d->id);
  return ids;
}

}  // namespace gpuop::agent
