#ifndef GPUOP_AGENT_LABELS_GFD_TEST_LABELS_H_
#define GPUOP_AGENT_LABELS_GFD_TEST_LABELS_H_

// Test data shared by the label tests (not linked into the agent).

#include "agent/labels/labels.h"

namespace gpuop::agent::gfd_test {

// `specific` plus what GFD writes on every NVIDIA node with driver 570.86.15 and CUDA 12.8,
// and gpuop's own labels: the driver version split at '.', the CUDA version 12080 as major 12
// / minor 8 (also under the deprecated cuda.driver.* / cuda.runtime.* keys), mps.capable false
// unless `specific` says otherwise (only MPS sharing makes it true), nvidia.com/gpu.present as
// NVIDIA's operator sets it.
inline NodeLabels WithDriver570Labels(NodeLabels specific) {
  specific.insert({
      {"gpuop.io/gpu.present", "true"},
      {"gpuop.io/gpu.vendor", "nvidia"},
      {"nvidia.com/cuda.driver-version.full", "570.86.15"},
      {"nvidia.com/cuda.driver-version.major", "570"},
      {"nvidia.com/cuda.driver-version.minor", "86"},
      {"nvidia.com/cuda.driver-version.revision", "15"},
      {"nvidia.com/cuda.driver.major", "570"},
      {"nvidia.com/cuda.driver.minor", "86"},
      {"nvidia.com/cuda.driver.rev", "15"},
      {"nvidia.com/cuda.runtime-version.full", "12.8"},
      {"nvidia.com/cuda.runtime-version.major", "12"},
      {"nvidia.com/cuda.runtime-version.minor", "8"},
      {"nvidia.com/cuda.runtime.major", "12"},
      {"nvidia.com/cuda.runtime.minor", "8"},
      {"nvidia.com/gpu.present", "true"},
      {"nvidia.com/mps.capable", "false"},
  });
  return specific;
}

}  // namespace gpuop::agent::gfd_test

#endif  // GPUOP_AGENT_LABELS_GFD_TEST_LABELS_H_
