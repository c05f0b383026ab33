#include "operator/nodes/pod_actions.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "kube/client/resource.h"

namespace gpuop::op {
namespace {

// Gone already, or replaced by a pod of the same name (the UID precondition failed): either
// way the pod meant is no longer there.
bool Gone(const absl::Status& status) {
  return absl::IsNotFound(status) || absl::IsAborted(status) || absl::IsFailedPrecondition(status);
}

}  // namespace

std::vector<std::string> DeletePods(kube::Client& client, const std::vector<PodRef>& pods,
                                    std::optional<int64_t> grace_seconds) {
  std::vector<std::string> problems;
  for (const PodRef& pod : pods) {
    absl::Status deleted = client.Delete(kube::resources::kPods, pod.ns, pod.name,
                                         {.uid = pod.uid, .grace_period_seconds = grace_seconds});
    if (!deleted.ok() && !Gone(deleted)) {
      problems.push_back(
          absl::StrCat("deleting pod ", pod.ns, "/", pod.name, " failed: ", deleted.message()));
    }
  }
  return problems;
}

std::vector<std::string> EvictPods(kube::Client& client, const std::vector<PodRef>& pods) {
  std::vector<std::string> problems;
  for (const PodRef& pod : pods) {
    const std::string key = absl::StrCat(pod.ns, "/", pod.name);
    absl::StatusOr<kube::EvictionResult> evicted = client.Evict(pod.ns, pod.name, {.uid = pod.uid});
    if (!evicted.ok()) {
      if (!Gone(evicted.status())) {
        problems.push_back(
            absl::StrCat("evicting pod ", key, " failed: ", evicted.status().message()));
      }
    } else if (evicted->outcome == kube::EvictionResult::Outcome::kBlocked) {
      absl::string_view why = evicted->message;
      absl::ConsumePrefix(&why, absl::StrCat("evict pod ", key, ": "));
      problems.push_back(
          absl::StrCat("eviction of pod ", key, " is blocked by a PodDisruptionBudget: ", why));
    }
  }
  return problems;
}

}  // namespace gpuop::op
