#ifndef GPUOP_AGENT_CDI_INJECT_STATUS_H_
#define GPUOP_AGENT_CDI_INJECT_STATUS_H_

#include "agent/cdi/hook/status.h"

// gpuop-container-runtime is linked with -static for the same reason as gpuop-cdi-hook (containerd
// runs it on the host, whatever the host's distribution), so this module uses the hook's
// standard-library Status rather than abseil's.
namespace gpuop::agent::cdi::inject {

using ::gpuop::agent::cdi::hook::Status;
using ::gpuop::agent::cdi::hook::StatusOr;

}  // namespace gpuop::agent::cdi::inject

#endif  // GPUOP_AGENT_CDI_INJECT_STATUS_H_
