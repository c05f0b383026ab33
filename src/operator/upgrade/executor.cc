#include "operator/upgrade/executor.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "kube/client/resource.h"
#include "kube/types/object_meta.h"
#include "operator/api/node_state.h"
#include "operator/cache/cache.h"

namespace gpuop::op::upgrade {

kube::Json Executor::NodePatch(const NodePlan& plan, const std::string& message, absl::Time now) {
  kube::Json labels = kube::Json::object();
  kube::Json annotations = kube::Json::object();
  kube::Json spec = kube::Json::object();
  for (const auto& [key, value] : plan.set_labels) {
    labels[key] = value.empty() ? kube::Json(nullptr) : kube::Json(value);
  }
  if (plan.Transition()) {
    labels[kUpgradeStateLabel] = std::string(UpgradeStateLabelValue(plan.to));
    annotations[kUpgradeSinceAnnotation] = kube::FormatTimestamp(now);
  } else if (plan.stamp_since) {
    annotations[kUpgradeSinceAnnotation] = kube::FormatTimestamp(now);
  }
  if (message != plan.current_message || plan.Transition()) {
    annotations[kUpgradeMessageAnnotation] =
        message.empty() ? kube::Json(nullptr) : kube::Json(message);
  }
  if (plan.finish_pool_move) {
    annotations[kDriverPoolTargetAnnotation] = nullptr;
    annotations[kDriverOsTargetAnnotation] = nullptr;
  }
  if (plan.finish_removal) annotations[kDriverRemovalAnnotation] = nullptr;
  if (plan.release_safe_load) annotations[kDriverSafeLoadAnnotation] = nullptr;
  if (plan.set_cordoned_before.has_value()) {
    annotations[kWasCordonedAnnotation] =
        *plan.set_cordoned_before ? kube::Json("true") : kube::Json(nullptr);
  }
  if (plan.action == Action::kCordon) spec["unschedulable"] = true;
  if (plan.action == Action::kUncordon) spec["unschedulable"] = false;
  kube::Json patch = kube::Json::object();
  kube::Json metadata = kube::Json::object();
  if (!labels.empty()) metadata["labels"] = labels;
  if (!annotations.empty()) metadata["annotations"] = annotations;
  if (!metadata.empty()) patch["metadata"] = metadata;
  if (!spec.empty()) patch["spec"] = spec;
  return patch.empty() ? kube::Json(nullptr) : patch;
}

std::vector<std::string> Executor::RunPodAction(const NodePlan& plan) {
  switch (plan.action) {
    case Action::kDeletePods:
      return DeletePods(client_, plan.pods, plan.grace_seconds);
    case Action::kDeleteDriverPod:
      return DeletePods(client_, plan.pods, std::nullopt);
    case Action::kEvictPods:
      return EvictPods(client_, plan.pods);
    case Action::kNone:
    case Action::kCordon:
    case Action::kUncordon:
      break;
  }
  return {};
}

absl::StatusOr<ExecuteResult> Executor::Execute(const NodePlan& plan, absl::Time now) {
  ExecuteResult result;
  if (plan.excluded) return result;
  result.problems = RunPodAction(plan);
  std::string message = plan.message;
  if (!result.problems.empty()) {
    absl::StrAppend(&message, message.empty() ? "" : "; ", absl::StrJoin(result.problems, "; "));
  }
  const kube::Json patch = NodePatch(plan, message, now);
  if (patch.is_null()) return result;
  absl::StatusOr<kube::Json> patched =
      client_.Patch(kube::resources::kNodes, "", plan.node, kube::PatchType::kMergePatch, patch,
                    {.field_manager = OperatorCache::kFieldManager});
  if (!patched.ok()) return patched.status();
  result.patched = true;
  result.resource_version =
      (*patched).value("metadata", kube::Json::object()).value("resourceVersion", "");
  if (plan.Transition() && events_ != nullptr) {
    const bool failed = plan.to == UpgradeState::kUpgradeFailed;
    std::string note = absl::StrCat("driver upgrade: ", UpgradeStateLabelValue(plan.to));
    if (plan.from != UpgradeState::kUnknown) {
      note = absl::StrCat("driver upgrade: ", UpgradeStateLabelValue(plan.from), " -> ",
                          UpgradeStateLabelValue(plan.to));
    }
    if (!message.empty()) absl::StrAppend(&note, ": ", message);
    events_->Record(
        kube::ObjectReference{
            .api_version = "v1", .kind = "Node", .name = plan.node, .uid = plan.node_uid},
        failed ? kube::EventType::kWarning : kube::EventType::kNormal, UpgradeStateReason(plan.to),
        "DriverUpgrade", note);
  }
  return result;
}

}  // namespace gpuop::op::upgrade
