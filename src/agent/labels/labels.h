#ifndef GPUOP_AGENT_LABELS_LABELS_H_
#define GPUOP_AGENT_LABELS_LABELS_H_

#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "agent/deviceplugin/config.h"
#include "hw/amd/amd_accelerator.h"
#include "hw/model.h"

namespace gpuop::agent {

using NodeLabels = std::map<std::string, std::string>;

// What the labels are computed from.
struct LabelInputs {
  std::optional<hw::Inventory> nvidia;
  std::optional<hw::AmdDiscovery> amd;
  // The device plugin's configuration: MIG strategy and sharing shape the labels.
  DevicePluginConfig plugin_config;
  // The machine type for nvidia.com/gpu.machine (MachineType reads it).
  std::string machine = "unknown";
  // When the labels are computed, for nvidia.com/gfd.timestamp; empty leaves it out
  // (flags.gfd.noTimestamp).
  std::optional<absl::Time> timestamp;
};

// The node labels gpuop's agent owns, computed from the node's GPUs:
// - NVIDIA nodes: GPU feature discovery's keys and values (internal/gfd_labels.h has the
//   rules; docs/compatibility.md the table), so existing nodeSelectors keep working, plus
//   nvidia.com/gpu.present=true as NVIDIA's GPU operator sets it;
// - AMD nodes: the k8s-node-labeller's labels (hw::AmdNodeLabels);
// - every GPU node: gpuop.io/gpu.present=true and gpuop.io/gpu.vendor.
// A node without GPUs gets no labels, so applying the result removes stale ones. Values are
// made valid label values (at most 63 characters of [A-Za-z0-9._-], alphanumeric at both ends).
NodeLabels ComputeNodeLabels(const LabelInputs& inputs);

// The machine type as GPU feature discovery reads it: the content of `path` (flags.gfd.
// machineTypeFile, by default /sys/class/dmi/id/product_name) without surrounding
// whitespace; "unknown" when `path` is empty or cannot be read.
std::string MachineType(const std::string& path);

// flags.gfd as the labels component applies them. Each setting comes from the command line
// when given there, else from the configuration's flags.gfd, else GFD's default.
struct GfdOverrides {
  std::optional<bool> no_timestamp;
  std::optional<absl::Duration> sleep_interval;
  std::optional<std::string> machine_type_file;
};
struct GfdSettings {
  bool timestamp = true;                        // noTimestamp false
  absl::Duration interval = absl::Seconds(60);  // sleepInterval: between full re-labellings
  std::string machine_type_file = "/sys/class/dmi/id/product_name";  // a host path
};
// InvalidArgument naming the field when the interval is under a second.
[[nodiscard]] absl::StatusOr<GfdSettings> ResolveGfdSettings(const GfdFlags& config,
                                                             const GfdOverrides& command_line);

// `value` as a valid label value: other characters become '-', cut to 63, trimmed to
// alphanumeric ends.
std::string LabelValue(absl::string_view value);

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_LABELS_LABELS_H_
