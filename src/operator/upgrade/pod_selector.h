#ifndef GPUOP_OPERATOR_UPGRADE_POD_SELECTOR_H_
#define GPUOP_OPERATOR_UPGRADE_POD_SELECTOR_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kube/types/selector.h"

namespace gpuop::op::upgrade {

// Parses a label selector in the kubectl form the upgrade policy uses for its pod selectors
// (spec.upgrade.waitForJobs.podSelector, spec.upgrade.drain.podSelector):
//   "app=train", "app==train", "tier!=web", "env in (a,b)", "env notin (c)", "gpu", "!spot",
// comma-separated, all of which must hold. "" matches every pod. InvalidArgument naming `field`
// and the offending term for anything else.
// Pure; thread-safe.
[[nodiscard]] absl::StatusOr<kube::LabelSelector> ParsePodSelector(absl::string_view text,
                                                                   absl::string_view field);

}  // namespace gpuop::op::upgrade

#endif  // GPUOP_OPERATOR_UPGRADE_POD_SELECTOR_H_
