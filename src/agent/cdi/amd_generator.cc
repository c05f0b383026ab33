#include "agent/cdi/amd_generator.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/cdi/validate.h"
#include "common/status_macros.h"

namespace gpuop::agent::cdi {
namespace {

// The node's path below dev_root ("dri/card1"), or nullopt when it is not below it.
std::optional<std::string> BelowDevRoot(const std::string& dev_root, const std::string& path) {
  const std::string root = JoinPath(dev_root, "");
  const std::string prefix = root == "/" ? root : root + "/";
  if (!absl::StartsWith(path, prefix) || path.size() == prefix.size()) return std::nullopt;
  return path.substr(prefix.size());
}

}  // namespace

AmdCdiGenerator::AmdCdiGenerator(AmdCdiOptions options) : options_(std::move(options)) {}

absl::StatusOr<GeneratedSpec> AmdCdiGenerator::Generate(const hw::Inventory& inventory) const {
  const std::string kind = absl::StrCat(options_.vendor, "/", options_.device_class);
  if (absl::Status status = ValidateKind(kind); !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("AMD CDI: ", status.message()));
  }
  if (options_.dev_root.empty() || options_.dev_root.front() != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("AMD CDI: device root \"", options_.dev_root, "\" is not an absolute path"));
  }
  GeneratedSpec out;
  out.spec.kind = kind;
  // The edit for the node at `relative` below dev_root; nullopt when it does not exist.
  auto node = [&](const std::string& relative) -> absl::StatusOr<std::optional<DeviceNode>> {
    absl::StatusOr<DeviceNode> n =
        options_.files.Node(JoinPath("/dev", relative), JoinPath(options_.dev_root, relative));
    if (n.ok()) return std::optional<DeviceNode>(*std::move(n));
    if (absl::IsNotFound(n.status())) return std::nullopt;
    return n.status();
  };

  for (const hw::Gpu& gpu : inventory.gpus) {
    const std::string owner = absl::StrCat("GPU ", gpu.index, " (", gpu.pci_bus_id, ")");
    if (gpu.vendor != hw::Vendor::kAmd) {
      return absl::InvalidArgumentError(absl::StrCat("AMD CDI: ", owner, " is from vendor ",
                                                     hw::VendorName(gpu.vendor),
                                                     "; pass the AMD backend's inventory"));
    }
    ContainerEdits edits;
    bool complete = true;
    for (const std::string& path : gpu.device_nodes) {
      const std::optional<std::string> relative = BelowDevRoot(options_.dev_root, path);
      if (!relative.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat("AMD CDI: ", owner, " device node ", path,
                                                       " is not under ", options_.dev_root));
      }
      if (*relative == "kfd") continue;  // spec-wide
      GPUOP_ASSIGN_OR_RETURN(const std::optional<DeviceNode> n, node(*relative));
      if (!n.has_value()) {
        out.warnings.push_back(
            absl::StrCat(owner, " left out: device node ", path, " does not exist"));
        complete = false;
        break;
      }
      edits.device_nodes.push_back(*n);
    }
    if (!complete) continue;
    if (edits.empty()) {
      out.warnings.push_back(absl::StrCat(owner, " left out: it has no DRM device node"));
      continue;
    }
    out.spec.devices.push_back({.name = absl::StrCat(gpu.index), .container_edits = edits});
    if (!gpu.pci_bus_id.empty()) {
      out.spec.devices.push_back({.name = gpu.pci_bus_id, .container_edits = edits});
    }
  }
  if (out.spec.devices.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("AMD CDI: no device to describe among ", inventory.gpus.size(), " GPU(s)",
                     out.warnings.empty() ? "" : ": ", absl::StrJoin(out.warnings, "; ")));
  }
  if (options_.all_device) out.spec.devices.push_back(AllDevice(out.spec.devices));

  GPUOP_ASSIGN_OR_RETURN(const std::optional<DeviceNode> kfd, node("kfd"));
  if (kfd.has_value()) {
    out.spec.container_edits.device_nodes.push_back(*kfd);
  } else {
    out.warnings.push_back(absl::StrCat("device node ", JoinPath(options_.dev_root, "kfd"),
                                        " does not exist; compute needs it"));
  }
  if (absl::Status status = FinishSpec(out.spec); !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("AMD CDI: ", status.message()));
  }
  return out;
}

}  // namespace gpuop::agent::cdi
