#ifndef GPUOP_OPERATOR_CACHE_WRITE_TRACKER_H_
#define GPUOP_OPERATOR_CACHE_WRITE_TRACKER_H_

#include <map>
#include <string>

#include "absl/time/time.h"
#include "kube/informer/store.h"
#include "operator/cache/cache.h"

namespace gpuop::op {

// Node writes a controller made and its cache may not show yet. A controller that plans from
// the cache must not plan again on a stale view (it would start more nodes than its limits
// allow, or repeat a step): it records each write and waits until CaughtUp().
// Not thread-safe (the owner locks).
class WriteTracker {
 public:
  explicit WriteTracker(absl::Duration limit = absl::Seconds(30)) : limit_(limit) {}

  void Record(const std::string& node, std::string resource_version, absl::Time now);

  // Whether `nodes` shows every recorded write (or a later version, or the node is gone). A
  // write older than the limit is given up on. Forgets writes it no longer waits for.
  bool CaughtUp(const kube::Store<NodeEntry>& nodes, absl::Time now);

 private:
  struct Write {
    std::string resource_version;
    absl::Time at;
  };
  const absl::Duration limit_;
  std::map<std::string, Write> pending_;
};

}  // namespace gpuop::op

#endif  // GPUOP_OPERATOR_CACHE_WRITE_TRACKER_H_
