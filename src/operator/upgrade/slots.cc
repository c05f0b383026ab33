#include "operator/upgrade/slots.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace gpuop::op::upgrade {
namespace {

std::string Nodes(int64_t n) { return absl::StrCat(n, n == 1 ? " node" : " nodes"); }

std::string MaxUnavailableText(const IntOrPercent& max_unavailable, int64_t resolved,
                               int64_t total) {
  if (!max_unavailable.percent) return absl::StrCat("spec.upgrade.maxUnavailable is ", resolved);
  return absl::StrCat("spec.upgrade.maxUnavailable is ", max_unavailable.value, "% of ",
                      Nodes(total), ", ", resolved);
}

}  // namespace

Slots ComputeSlots(const SlotCounts& counts, int64_t max_parallel,
                   const IntOrPercent& max_unavailable) {
  Slots slots;
  slots.max_unavailable = std::max<int64_t>(0, max_unavailable.Resolve(counts.total));
  const std::string unavailable_limit =
      MaxUnavailableText(max_unavailable, slots.max_unavailable, counts.total);

  int64_t available = counts.total;
  if (max_parallel > 0) {
    available = max_parallel - counts.in_progress;
    slots.limit = absl::StrCat(Nodes(counts.in_progress), counts.in_progress == 1 ? " is" : " are",
                               " upgrading and spec.upgrade.maxParallel is ", max_parallel);
  }
  if (available >= slots.max_unavailable) {
    available = slots.max_unavailable;
    slots.limit = unavailable_limit;
  }
  if (counts.unavailable >= slots.max_unavailable) {
    available = 0;
    slots.limit =
        absl::StrCat(Nodes(counts.unavailable), counts.unavailable == 1 ? " is" : " are",
                     " unavailable (cordoned, NotReady or being cordoned) and ", unavailable_limit);
  } else if (available > slots.max_unavailable - counts.unavailable) {
    available = slots.max_unavailable - counts.unavailable;
    slots.limit =
        absl::StrCat(Nodes(counts.unavailable), counts.unavailable == 1 ? " is" : " are",
                     " unavailable (cordoned, NotReady or being cordoned) and ", unavailable_limit);
  }
  slots.available = std::max<int64_t>(0, available);
  return slots;
}

}  // namespace gpuop::op::upgrade
