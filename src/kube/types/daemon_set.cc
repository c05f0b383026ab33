#include "kube/types/daemon_set.h"

#include "common/status_macros.h"
#include "kube/types/json_fields.h"

namespace gpuop::kube {

bool DaemonSet::RolledOut() const {
  return observed_generation >= metadata.generation &&
         updated_number_scheduled == desired_number_scheduled &&
         number_available == desired_number_scheduled && number_unavailable == 0;
}

absl::StatusOr<DaemonSet> ParseDaemonSet(const nlohmann::json& object) {
  DaemonSet ds;
  GPUOP_ASSIGN_OR_RETURN(ds.metadata,
                         ParseObjectMeta(object, AnnotationFilter::Prefixes({"gpuop.io/"})));
  ds.update_strategy = StringField(Field(Field(object, "spec"), "updateStrategy"), "type");
  const nlohmann::json& s = Field(object, "status");
  auto i32 = [&s](const char* key) { return static_cast<int32_t>(IntField(s, key)); };
  ds.observed_generation = IntField(s, "observedGeneration");
  ds.desired_number_scheduled = i32("desiredNumberScheduled");
  ds.current_number_scheduled = i32("currentNumberScheduled");
  ds.updated_number_scheduled = i32("updatedNumberScheduled");
  ds.number_ready = i32("numberReady");
  ds.number_available = i32("numberAvailable");
  ds.number_unavailable = i32("numberUnavailable");
  ds.number_misscheduled = i32("numberMisscheduled");
  return ds;
}

}  // namespace gpuop::kube
