#include "kube/types/lease.h"

#include "common/status_macros.h"
#include "kube/types/json_fields.h"

namespace gpuop::kube {

nlohmann::json Lease::ToJson() const {
  nlohmann::json spec = nlohmann::json::object();
  if (!holder_identity.empty()) spec["holderIdentity"] = holder_identity;
  if (lease_duration_seconds > 0) spec["leaseDurationSeconds"] = lease_duration_seconds;
  if (acquire_time) spec["acquireTime"] = FormatMicroTimestamp(*acquire_time);
  if (renew_time) spec["renewTime"] = FormatMicroTimestamp(*renew_time);
  spec["leaseTransitions"] = lease_transitions;
  nlohmann::json object = {{"apiVersion", "coordination.k8s.io/v1"},
                           {"kind", "Lease"},
                           {"metadata", {{"name", metadata.name}}},
                           {"spec", spec}};
  if (!metadata.namespace_.empty()) object["metadata"]["namespace"] = metadata.namespace_;
  if (!metadata.resource_version.empty()) {
    object["metadata"]["resourceVersion"] = metadata.resource_version;
  }
  return object;
}

absl::StatusOr<Lease> ParseLease(const nlohmann::json& object) {
  Lease lease;
  GPUOP_ASSIGN_OR_RETURN(lease.metadata, ParseObjectMeta(object));
  const nlohmann::json& spec = Field(object, "spec");
  lease.holder_identity = StringField(spec, "holderIdentity");
  lease.lease_duration_seconds = static_cast<int32_t>(IntField(spec, "leaseDurationSeconds"));
  lease.lease_transitions = static_cast<int32_t>(IntField(spec, "leaseTransitions"));
  if (std::string t = StringField(spec, "acquireTime"); !t.empty()) {
    GPUOP_ASSIGN_OR_RETURN(lease.acquire_time, ParseTimestamp(t));
  }
  if (std::string t = StringField(spec, "renewTime"); !t.empty()) {
    GPUOP_ASSIGN_OR_RETURN(lease.renew_time, ParseTimestamp(t));
  }
  return lease;
}

}  // namespace gpuop::kube
