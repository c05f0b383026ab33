#ifndef GPUOP_AGENT_MIG_MIG_CONFIG_H_
#define GPUOP_AGENT_MIG_MIG_CONFIG_H_

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hw/model.h"

namespace gpuop::agent::mig {

// The MIG configuration file, in mig-parted's shape:
//
//   version: v1
//   mig-configs:
//     all-balanced:
//       - devices: all                           # or a list of GPU indexes: [0, 1]
//         device-filter: NVIDIA A100-SXM4-40GB   # optional: product name, or a list of them
//         mig-enabled: true
//         mig-devices: {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}
//
// A named layout is a list of entries; each selects GPUs (by index, optionally narrowed to some
// products) and states their MIG mode and GPU-instance profiles. GPUs no entry selects are left
// as they are. mig-parted's PCI device-id filters ("0x20B010DE") are not supported: the product
// name says the same and is what `nvidia-smi -L` shows.

// Which GPUs an entry selects.
struct DeviceSelector {
  bool all = true;
  std::vector<int> indexes;  // when !all: distinct, non-negative, non-empty
};

struct MigConfigEntry {
  DeviceSelector devices;
  // Product names as NVML reports them ("NVIDIA A100-SXM4-40GB"), compared case-insensitively;
  // empty selects every product.
  std::vector<std::string> device_filter;
  bool mig_enabled = false;
  // GPU-instance profile ("1g.5gb") -> count (> 0). Empty when MIG is disabled.
  std::map<std::string, int> mig_devices;
};

struct MigConfig {
  std::string source;  // the file it was read from, for messages
  std::map<std::string, std::vector<MigConfigEntry>> layouts;
};

// Parses the YAML text of a MIG configuration. InvalidArgument names `source` and the field:
// "mig config /etc/gpuop/mig.yaml: mig-configs.custom[1].mig-devices.1g.5gb: must be a
// positive integer". Unknown keys are errors, so a typo cannot silently change nothing.
[[nodiscard]] absl::StatusOr<MigConfig> ParseMigConfig(absl::string_view yaml,
                                                       absl::string_view source);

// Reads and parses `path`. NotFound when the file does not exist.
[[nodiscard]] absl::StatusOr<MigConfig> LoadMigConfig(const std::filesystem::path& path);

// What one GPU should look like.
struct GpuLayout {
  bool mig_enabled = false;
  std::map<std::string, int> mig_devices;  // profile -> count

  friend bool operator==(const GpuLayout&, const GpuLayout&) = default;
};

// The wanted state of the GPUs a layout selects, by GPU index. GPUs it does not select are
// absent and left untouched.
using DesiredLayout = std::map<int, GpuLayout>;

// Resolves layout `name` of `config` against the node's GPUs. InvalidArgument, naming the
// layout and entry, when the layout is not defined, an entry names a GPU index the node does
// not have, or two entries select the same GPU. Whether the profiles exist on the GPUs is
// checked by the planner, which knows their profile tables.
[[nodiscard]] absl::StatusOr<DesiredLayout> ResolveLayout(const MigConfig& config,
                                                          const std::string& name,
                                                          const std::vector<hw::Gpu>& gpus);

// "1x3g.20gb, 2x1g.5gb" (largest profile first, by name otherwise); "MIG disabled" or
// "MIG enabled, no devices" for the edge cases.
std::string DescribeLayout(const GpuLayout& layout);

}  // namespace gpuop::agent::mig

#endif  // GPUOP_AGENT_MIG_MIG_CONFIG_H_
