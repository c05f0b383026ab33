#ifndef GPUOP_AGENT_VALIDATE_MIG_CUDA_H_
#define GPUOP_AGENT_VALIDATE_MIG_CUDA_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "agent/validate/checks.h"

namespace gpuop::agent {

// A MigCudaRunner that runs `argv` plus "--device=<MIG uuid>" as a child process (gpuop-agent
// cuda-vector-add, which sets CUDA_VISIBLE_DEVICES before it loads CUDA) and returns what it
// printed; a child that fails or outlives `timeout` is an error carrying its output.
MigCudaRunner SubprocessMigCudaRunner(std::vector<std::string> argv,
                                      absl::Duration timeout = absl::Minutes(2));

// What `gpuop-agent cuda-vector-add` does in that child: CUDA_VISIBLE_DEVICES=`device`, then the
// vector add on CUDA device 0 with `library`. Returns "vector add on <CUDA's device name>".
absl::StatusOr<std::string> RunVectorAddOn(const std::string& device, const std::string& library);

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_VALIDATE_MIG_CUDA_H_
