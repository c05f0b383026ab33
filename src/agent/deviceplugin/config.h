#ifndef GPUOP_AGENT_DEVICEPLUGIN_CONFIG_H_
#define GPUOP_AGENT_DEVICEPLUGIN_CONFIG_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpuop::agent {

// How MIG devices become resources (NVIDIA's three strategies).
enum class MigStrategy {
  kNone,    // whole GPUs as nvidia.com/gpu; MIG devices are not advertised
  kSingle,  // every GPU has MIG on with one profile: MIG devices as nvidia.com/gpu
  kMixed,   // MIG devices as nvidia.com/mig-<profile>, other GPUs as nvidia.com/gpu
};
std::string MigStrategyName(MigStrategy strategy);

// What Allocate hands the container runtime.
enum class DeviceListStrategy {
  kCdi,     // cdi_devices (the runtime injects from the CDI spec)
  kEnvVar,  // NVIDIA_VISIBLE_DEVICES (for runtimes without CDI)
  kBoth,
};

// One time-slicing rule: `replicas` shares of each selected GPU of `resource`. `devices` selects
// GPUs by index ("0") or UUID; empty means every GPU of the resource. Several rules may name the
// same resource with disjoint devices, which gives different GPUs different replica counts.
struct TimeSlicingRule {
  std::string resource;  // "nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "amd.com/gpu"
  int replicas = 1;
  std::vector<std::string> devices;
  // Advertise as "<resource>.shared" instead of the resource itself.
  std::optional<bool> rename;
};

// The device plugin's configuration, in the YAML format of NVIDIA's device plugin config file
// (version v1), so existing ConfigMaps keep working:
//
//   version: v1
//   flags:
//     migStrategy: none | single | mixed
//     deviceListStrategy: cdi | envvar | both      (gpuop: default cdi)
//   sharing:
//     timeSlicing:
//       renameByDefault: false
//       failRequestsGreaterThanOne: false
//       resources:
//       - name: nvidia.com/gpu
//         replicas: 4
//         devices: ["0", "GPU-..."]               (optional)
//
// gpuop extension: several `resources` entries may name the same resource with disjoint
// `devices`, so each GPU can have its own replica count (NVIDIA's plugin rejects that).
struct DevicePluginConfig {
  MigStrategy mig_strategy = MigStrategy::kNone;
  DeviceListStrategy device_list_strategy = DeviceListStrategy::kCdi;
  bool rename_by_default = false;
  bool fail_requests_greater_than_one = false;
  std::vector<TimeSlicingRule> time_slicing;

  bool Shared() const { return !time_slicing.empty(); }
};

// Parses the YAML text. InvalidArgument names `source` (the file), the field and the problem:
// "config /etc/gpuop/plugin/a100: sharing.timeSlicing.resources[1].replicas: must be >= 1".
// An empty document is the default configuration.
[[nodiscard]] absl::StatusOr<DevicePluginConfig> ParseDevicePluginConfig(absl::string_view yaml,
                                                                         absl::string_view source);

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_DEVICEPLUGIN_CONFIG_H_
