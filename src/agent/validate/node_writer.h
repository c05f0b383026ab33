#ifndef GPUOP_AGENT_VALIDATE_NODE_WRITER_H_
#define GPUOP_AGENT_VALIDATE_NODE_WRITER_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "agent/validate/validator.h"
#include "common/clock.h"
#include "kube/client/client.h"

namespace gpuop::agent {

// Writes a validation's state to the Node as the GPUValidated condition. lastTransitionTime
// moves only when the status changes. Not thread-safe: one validator's updates, in order.
class NodeValidationWriter {
 public:
  NodeValidationWriter(kube::Client& client, std::string node,
                       const common::Clock& clock = common::Clock::Real())
      : client_(client), node_(std::move(node)), clock_(clock) {}

  // One try.
  [[nodiscard]] absl::Status Write(const ValidationState& state);

 private:
  kube::Client& client_;
  const std::string node_;
  const common::Clock& clock_;
  std::string last_status_;
  absl::Time transition_;
};

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_VALIDATE_NODE_WRITER_H_
