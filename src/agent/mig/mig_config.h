#ifndef GPUOP_AGENT_MIG_MIG_CONFIG_H_
#define GPUOP_AGENT_MIG_MIG_CONFIG_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hw/model.h"

namespace gpuop::agent::mig {

// The MIG configuration file, in mig-parted's v1 format, loaded unchanged:
//
//   version: v1
//   mig-configs:
//     all-balanced:
//       - device-filter: ["0x20B010DE", "0x20B110DE"]  # optional: PCI ids, one or a list
//         devices: all                                # or a list of GPU indexes: [0, 1]
//         mig-enabled: true
//         mig-devices: {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}
//
// A named layout is a list of entries; each selects GPUs and states their MIG mode and
// GPU-instance profiles. As mig-parted applies them:
//   - entries apply in order, so for a GPU two entries select the later one wins;
//   - `devices: all` passes over GPUs that are not MIG-capable; an index list names GPUs
//     explicitly, and indexes the node does not have select nothing (one file serves nodes
//     with different GPU counts); a GPU that is not MIG-capable and is named explicitly with
//     `mig-enabled: false` is left alone, with `mig-enabled: true` it is an error (planner);
//   - `device-filter` is the PCI device id as NVML reports it, device << 16 | vendor
//     ("0x20B010DE": device 0x20B0, vendor 0x10DE), optionally with the subsystem id after a
//     colon ("0x233010DE:0x16C110DE"); a gpuop extension also takes the product name NVML
//     reports ("NVIDIA A100-SXM4-40GB", any case);
//   - `mig-devices` is required when `mig-enabled` is true (it may be {}), and must be empty
//     when false.
// GPUs no entry selects are left as they are.

// Which GPUs an entry selects.
struct DeviceSelector {
  bool all = true;
  std::vector<int> indexes;  // when !all: distinct, non-negative, non-empty
};

// One PCI id of a device-filter.
struct PciIdFilter {
  uint32_t device_id = 0;                // device << 16 | vendor
  std::optional<uint32_t> subsystem_id;  // subsystem device << 16 | subsystem vendor
};

struct MigConfigEntry {
  DeviceSelector devices;
  // The device-filter: PCI ids, and product names (compared case-insensitively). Both empty
  // selects every GPU; otherwise a GPU matching any of them.
  std::vector<PciIdFilter> pci_ids;
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

// Resolves layout `name` of `config` against the node's GPUs, by the rules above.
// InvalidArgument when the layout is not defined. Whether the profiles exist on the GPUs is
// checked by the planner, which knows their profile tables.
[[nodiscard]] absl::StatusOr<DesiredLayout> ResolveLayout(const MigConfig& config,
                                                          const std::string& name,
                                                          const std::vector<hw::Gpu>& gpus);

// "1x3g.20gb, 2x1g.5gb" (largest profile first, by name otherwise); "MIG disabled" or
// "MIG enabled, no devices" for the edge cases.
std::string DescribeLayout(const GpuLayout& layout);

}  // namespace gpuop::agent::mig

#endif  // GPUOP_AGENT_MIG_MIG_CONFIG_H_
