#include "agent/cdi/management.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/cdi/generator.h"
#include "agent/cdi/mig_caps.h"
#include "common/files.h"
#include "common/status_macros.h"

namespace gpuop::agent::cdi {
namespace {

constexpr char kCapsPrefix[] = "/dev/nvidia-caps/";

// Appends `node` to `nodes` unless a node with its container path is there already.
void AddOnce(std::vector<DeviceNode>& nodes, const DeviceNode& node) {
  const bool present = std::any_of(nodes.begin(), nodes.end(),
                                   [&](const DeviceNode& n) { return n.path == node.path; });
  if (!present) nodes.push_back(node);
}

void AddNodes(std::vector<DeviceNode>& nodes, const ContainerEdits& edits) {
  for (const DeviceNode& node : edits.device_nodes) {
    if (!absl::StartsWith(node.path, kCapsPrefix)) AddOnce(nodes, node);
  }
}

}  // namespace

absl::StatusOr<unsigned int> MigMonitorMinor(const std::filesystem::path& proc_dir) {
  const std::filesystem::path access = proc_dir / "driver/nvidia/capabilities/mig/monitor";
  GPUOP_ASSIGN_OR_RETURN(const std::optional<std::string> content,
                         common::ReadFileIfExists(access));
  if (content.has_value()) return ParseDeviceFileMinor(*content, access.string());
  const std::filesystem::path minors = proc_dir / "driver/nvidia-caps/mig-minors";
  GPUOP_ASSIGN_OR_RETURN(const std::optional<std::string> table, common::ReadFileIfExists(minors));
  if (table.has_value()) {
    const std::map<std::string, unsigned int> parsed = ParseMigMinors(*table);
    if (auto it = parsed.find("monitor"); it != parsed.end()) return it->second;
  }
  return absl::NotFoundError(
      absl::StrCat("the MIG monitor capability: ", access.string(), " does not exist and ",
                   minors.string(), table.has_value() ? " does not list it" : " does not exist"));
}

DeviceNode MigMonitorNode(const std::string& dev_root, unsigned int minor) {
  const std::string name = absl::StrCat("nvidia-caps/nvidia-cap", minor);
  DeviceNode node{.path = absl::StrCat("/dev/", name)};
  if (dev_root != "/dev") {
    node.host_path = (std::filesystem::path(dev_root) / name).lexically_normal().string();
  }
  return node;
}

absl::StatusOr<Spec> ManagementSpec(const std::vector<Spec>& vendor_specs,
                                    const std::optional<DeviceNode>& mig_monitor) {
  Device all{.name = "all"};
  for (const Spec& spec : vendor_specs) {
    AddNodes(all.container_edits.device_nodes, spec.container_edits);
    for (const Device& device : spec.devices) {
      AddNodes(all.container_edits.device_nodes, device.container_edits);
    }
  }
  if (all.container_edits.device_nodes.empty()) {
    return absl::InvalidArgumentError(
        "management spec: the vendor specs name no device node, so there is nothing to manage");
  }
  Device monitor{.name = "mig-monitor"};
  if (mig_monitor.has_value()) {
    monitor.container_edits.device_nodes.push_back(*mig_monitor);
  } else {
    monitor.container_edits.env.push_back("GPUOP_MIG_MONITOR=unavailable");
  }
  Spec spec{.kind = kManagementCdiKind, .devices = {std::move(all), std::move(monitor)}};
  GPUOP_RETURN_IF_ERROR(FinishSpec(spec));
  return spec;
}

}  // namespace gpuop::agent::cdi
