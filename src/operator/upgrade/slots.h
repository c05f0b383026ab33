#ifndef GPUOP_OPERATOR_UPGRADE_SLOTS_H_
#define GPUOP_OPERATOR_UPGRADE_SLOTS_H_

#include <cstdint>
#include <string>

#include "operator/api/policy.h"

namespace gpuop::op::upgrade {

// What the slot computation needs to know about the managed nodes.
struct SlotCounts {
  int64_t total = 0;  // managed GPU nodes
  // Nodes holding a slot: in a state where InProgress() is true. Nodes in upgrade-failed do not
  // count, so a node that failed never holds up the others.
  int64_t in_progress = 0;
  // Nodes out of service: cordoned, NotReady, or about to be cordoned (cordon-required). Each
  // node counts once, whatever the number of reasons.
  int64_t unavailable = 0;
};

struct Slots {
  // How many upgrade-required nodes may start (go to cordon-required) now.
  int64_t available = 0;
  // spec.upgrade.maxUnavailable resolved against the total (percentages round up).
  int64_t max_unavailable = 0;
  // Why `available` is no larger, in words for the wait message of nodes left waiting:
  // "1 node is upgrading and spec.upgrade.maxParallel is 1".
  std::string limit;
};

// The number of nodes that may start upgrading now:
//   max_unavailable = maxUnavailable resolved against total (rounded up);
//   available       = maxParallel - in_progress (maxParallel 0: no limit), at most
//                     max_unavailable;
//   if unavailable >= max_unavailable: 0; else at most max_unavailable - unavailable;
//   never negative.
// Pure; thread-safe.
Slots ComputeSlots(const SlotCounts& counts, int64_t max_parallel,
                   const IntOrPercent& max_unavailable);

}  // namespace gpuop::op::upgrade

#endif  // GPUOP_OPERATOR_UPGRADE_SLOTS_H_
