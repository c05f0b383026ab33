#ifndef GPUOP_AGENT_LABELS_LABELS_H_
#define GPUOP_AGENT_LABELS_LABELS_H_

#include <map>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "agent/deviceplugin/config.h"
#include "agent/deviceplugin/resources.h"
#include "hw/amd/amd_accelerator.h"
#include "hw/model.h"

namespace gpuop::agent {

using NodeLabels = std::map<std::string, std::string>;

// What the labels are computed from.
struct LabelInputs {
  std::optional<hw::Inventory> nvidia;
  std::optional<hw::AmdDiscovery> amd;
  // The device plugin's configuration and resulting plan (sharing, MIG strategy).
  DevicePluginConfig plugin_config;
  std::optional<ResourcePlan> plan;
  // The machine's product name (DMI), for nvidia.com/gpu.machine; empty leaves it out.
  std::string machine;
};

// The node labels gpuop's agent owns, computed from the node's GPUs:
// - NVIDIA nodes: GPU feature discovery's keys and values, so existing nodeSelectors keep
//   working: nvidia.com/gpu.present, gpu.product (with "-MIG-<profile>" under MIG strategy
//   single and "-SHARED" when time-sliced without renaming), gpu.count, gpu.memory (MiB),
//   where a MIG layout that does not fit strategy single (ClassifyMigSingle) gives GFD's
//   gpu.product "<model>-MIG-INVALID" with gpu.count, gpu.replicas and gpu.memory "0", and
//   single on a node without MIG-enabled GPUs describes the whole GPUs;
//   gpu.family, gpu.compute.major/minor, gpu.machine, gpu.replicas, gpu.sharing-strategy,
//   cuda.driver-version.{major,minor,revision,full}, cuda.runtime-version.{major,minor,full},
//   mig.capable, mig.strategy, mps.capable, and under strategy mixed
//   nvidia.com/mig-<profile>.{count,memory,slices.gi};
// - AMD nodes: the k8s-node-labeller's amd.com/gpu.* labels;
// - every GPU node: gpuop.io/gpu.present=true and gpuop.io/gpu.vendor.
// A node without GPUs gets no labels, so applying the result removes stale ones. Values are
// made valid label values (at most 63 characters of [A-Za-z0-9._-], alphanumeric at both ends).
NodeLabels ComputeNodeLabels(const LabelInputs& inputs);

// `value` as a valid label value: other characters become '-', cut to 63, trimmed to
// alphanumeric ends.
std::string LabelValue(absl::string_view value);

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_LABELS_LABELS_H_
