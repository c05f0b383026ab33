#ifndef GPUOP_AGENT_LABELS_GFD_LABELS_H_
#define GPUOP_AGENT_LABELS_GFD_LABELS_H_

#include <string>

#include "absl/strings/string_view.h"
#include "agent/labels/labels.h"

// NVIDIA GPU feature discovery's node labels (internal/lm of NVIDIA/k8s-device-plugin),
// computed the way GFD computes them; ComputeNodeLabels is the public entry point.
namespace gpuop::agent::internal {

// GFD's spelling of one part of a product name: every character outside [A-Za-z0-9._- ] is
// dropped, then the remaining words (runs of spaces) are joined with '-'.
// "NVIDIA A100-SXM4-40GB" -> "NVIDIA-A100-SXM4-40GB"; "Tesla T4 (rev a1)" -> "Tesla-T4-rev-a1".
std::string SanitiseProductPart(absl::string_view part);

// GFD's family label for a compute capability: hw::NvidiaFamily, "undefined" where that has
// no name (Jetson Thor's 11.x, and anything newer than rubin).
std::string GfdFamily(int compute_major, int compute_minor);

// GFD's gpu.mode for a PCI class code: 0x030000 (VGA) "graphics", 0x030200 (3D controller)
// "compute", anything else "unknown".
std::string GfdGpuMode(uint32_t pci_class);

// Adds the nvidia.com/ labels for `inputs.nvidia` (which has GPUs) to `labels`. Values are
// GFD's, then made valid label values with LabelValue where GFD's would not be.
void AddGfdLabels(const LabelInputs& inputs, NodeLabels& labels);

}  // namespace gpuop::agent::internal

#endif  // GPUOP_AGENT_LABELS_GFD_LABELS_H_
