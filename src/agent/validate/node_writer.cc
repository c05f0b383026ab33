#include "agent/validate/node_writer.h"

#include "agent/node/node_condition.h"

namespace gpuop::agent {

absl::Status NodeValidationWriter::Write(const ValidationState& state) {
  kube::Condition c = ValidationCondition(state);
  if (c.status != last_status_) {
    last_status_ = c.status;
    transition_ = clock_.Now();
  }
  c.last_transition_time = transition_;
  return PatchNodeCondition(client_, node_, c, clock_.Now());
}

}  // namespace gpuop::agent
