#include "agent/node/node_condition.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kube/client/resource.h"
#include "kube/events/event.h"

namespace gpuop::agent {

absl::Status PatchNodeCondition(kube::Client& client, const std::string& node,
                                const kube::Condition& condition, absl::Time heartbeat) {
  return PatchNodeConditions(client, node, {condition}, heartbeat);
}

absl::Status PatchNodeConditions(kube::Client& client, const std::string& node,
                                 const std::vector<kube::Condition>& conditions,
                                 absl::Time heartbeat) {
  kube::Json entries = kube::Json::array();
  for (const kube::Condition& condition : conditions) {
    entries.push_back(
        {{"type", condition.type},
         {"status", condition.status},
         {"reason", condition.reason},
         {"message", kube::Truncate(condition.message, kube::kMaxNoteBytes)},
         {"lastHeartbeatTime", kube::FormatTimestamp(heartbeat)},
         {"lastTransitionTime", kube::FormatTimestamp(condition.last_transition_time)}});
  }
  const kube::Json patch = {{"status", {{"conditions", entries}}}};
  return client
      .Patch(kube::resources::kNodes, "", node, kube::PatchType::kStrategicMergePatch, patch,
             {.subresource = "status"})
      .status();
}

absl::StatusOr<kube::Condition> GetNodeCondition(kube::Client& client, const std::string& node,
                                                 const std::string& type) {
  GPUOP_ASSIGN_OR_RETURN(kube::Json object, client.Get(kube::resources::kNodes, "", node));
  const kube::Json* list = nullptr;
  if (auto status = object.find("status"); status != object.end() && status->is_object()) {
    if (auto c = status->find("conditions"); c != status->end()) list = &*c;
  }
  if (list != nullptr) {
    const std::vector<kube::Condition> parsed = kube::ParseConditions(*list);
    if (const kube::Condition* c = kube::FindCondition(parsed, type)) return *c;
  }
  return absl::NotFoundError(absl::StrCat("Node ", node, " has no condition ", type));
}

}  // namespace gpuop::agent
