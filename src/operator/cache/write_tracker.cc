#include "operator/cache/write_tracker.h"

#include <cstdint>

#include "absl/strings/numbers.h"

namespace gpuop::op {

void WriteTracker::Record(const std::string& node, std::string resource_version, absl::Time now) {
  pending_[node] = {.resource_version = std::move(resource_version), .at = now};
}

bool WriteTracker::CaughtUp(const kube::Store<NodeEntry>& nodes, absl::Time now) {
  for (auto it = pending_.begin(); it != pending_.end();) {
    const std::string cached = nodes.ResourceVersion(it->first);
    uint64_t have = 0, want = 0;
    // resourceVersions are opaque, but etcd's increase: a later one includes the write.
    const bool seen = cached.empty() || cached == it->second.resource_version ||
                      (absl::SimpleAtoi(cached, &have) &&
                       absl::SimpleAtoi(it->second.resource_version, &want) && have >= want);
    if (seen || now - it->second.at >= limit_) {
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
  return pending_.empty();
}

}  // namespace gpuop::op
