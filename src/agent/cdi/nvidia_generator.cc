#include "agent/cdi/nvidia_generator.h"

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/cdi/mig_caps.h"
#include "agent/cdi/validate.h"
#include "common/status_macros.h"

namespace gpuop::agent::cdi {
namespace {

struct ControlNode {
  const char* name;    // below /dev
  bool cuda_needs_it;  // absence is worth a warning
};
constexpr ControlNode kControlNodes[] = {{"nvidiactl", true},
                                         {"nvidia-uvm", true},
                                         {"nvidia-uvm-tools", false},
                                         {"nvidia-modeset", false}};

const std::vector<std::string>& MountOptions() {
  static const std::vector<std::string> options = {"ro", "nosuid", "nodev", "rbind", "rprivate"};
  return options;
}

absl::Status RequireAbsolute(absl::string_view what, const std::string& path) {
  if (!path.empty() && path.front() == '/') return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("NVIDIA CDI: ", what, " \"", path, "\" is not an absolute path"));
}

std::string Describe(const hw::Gpu& gpu) {
  return absl::StrCat("GPU ", gpu.index, gpu.uuid.empty() ? "" : absl::StrCat(" (", gpu.uuid, ")"));
}

// Generation state for one call.
class Builder {
 public:
  Builder(const NvidiaCdiOptions& options, GeneratedSpec& out)
      : options_(options), out_(out), caps_(options.files.Open(options.proc_root)) {}

  // The edit for /dev/<name>, or nullopt with a warning when the node is missing.
  absl::StatusOr<std::optional<DeviceNode>> Node(const std::string& name, absl::string_view owner) {
    absl::StatusOr<DeviceNode> node =
        options_.files.Node(JoinPath("/dev", name), JoinPath(options_.dev_root, name));
    if (node.ok()) return std::optional<DeviceNode>(*std::move(node));
    if (!absl::IsNotFound(node.status())) return node.status();
    if (!owner.empty()) Warn(absl::StrCat(owner, " left out: ", node.status().message()));
    return std::nullopt;
  }

  absl::Status AddGpu(const hw::Gpu& gpu) {
    if (!gpu.minor_number.has_value()) {
      Warn(absl::StrCat(Describe(gpu), " left out: the inventory has no minor number for it"));
      return absl::OkStatus();
    }
    const unsigned int minor = *gpu.minor_number;
    GPUOP_ASSIGN_OR_RETURN(const std::optional<DeviceNode> node,
                           Node(absl::StrCat("nvidia", minor), Describe(gpu)));
    if (!node.has_value()) return absl::OkStatus();
    const ContainerEdits edits{.device_nodes = {*node}};
    AddDevice(absl::StrCat(gpu.index), gpu.uuid, edits);
    for (size_t i = 0; i < gpu.mig_devices.size(); ++i) {
      GPUOP_RETURN_IF_ERROR(AddMig(gpu, *node, i));
    }
    return absl::OkStatus();
  }

  // Spec-wide edits: environment, control nodes, driver files, hooks.
  absl::Status AddCommon(const std::string& driver_version) {
    ContainerEdits& edits = out_.spec.container_edits;
    edits.env = options_.env;
    for (const ControlNode& control : kControlNodes) {
      GPUOP_ASSIGN_OR_RETURN(const std::optional<DeviceNode> node, Node(control.name, ""));
      if (node.has_value()) {
        edits.device_nodes.push_back(*node);
      } else if (control.cuda_needs_it) {
        Warn(absl::StrCat("control device node ", JoinPath(options_.dev_root, control.name),
                          " does not exist; CUDA needs it"));
      }
    }

    DriverFilesOptions driver = options_.driver;
    driver.driver_version = driver_version;
    absl::StatusOr<DriverFiles> files = FindDriverFiles(options_.files, driver);
    if (!files.ok()) {
      return absl::Status(files.status().code(),
                          absl::StrCat("NVIDIA CDI: driver files: ", files.status().message()));
    }
    const DriverFiles& found = *files;
    if (found.libraries.empty()) {
      Warn(absl::StrCat("no driver libraries lib*.so.", driver_version, " under ",
                        driver.driver_root, " in ", absl::StrJoin(driver.library_dirs, ", ")));
    }
    auto mount = [&](const DriverFile& file) {
      edits.mounts.push_back({.host_path = file.host_path,
                              .container_path = file.container_path,
                              .options = MountOptions()});
    };
    for (const DriverFile& file : found.libraries) mount(file);
    for (const DriverFile& file : found.binaries) mount(file);
    if (found.firmware.has_value()) mount(*found.firmware);
    for (const DriverFile& file : found.ipc) mount(file);

    if (options_.hook_path.empty()) return absl::OkStatus();
    const std::string argv0 = std::filesystem::path(options_.hook_path).filename().string();
    auto hook = [&](std::vector<std::string> args) -> Hook& {
      args.insert(args.begin(), argv0);
      return edits.hooks.emplace_back(Hook{
          .hook_name = "createContainer", .path = options_.hook_path, .args = std::move(args)});
    };
    if (!found.links.empty()) {
      Hook& links = hook({"create-symlinks"});
      for (const std::string& link : found.links) {
        links.args.insert(links.args.end(), {"--link", link});
      }
    }
    if (!found.libraries.empty()) {
      hook({"enable-cuda-compat", absl::StrCat("--host-driver-version=", driver_version)});
    }
    if (!found.library_dirs.empty()) {
      Hook& ldcache = hook({"update-ldcache"});
      for (const std::string& dir : found.library_dirs) {
        ldcache.args.insert(ldcache.args.end(), {"--folder", dir});
      }
    }
    return absl::OkStatus();
  }

 private:
  absl::Status AddMig(const hw::Gpu& gpu, const DeviceNode& gpu_node, size_t mig_index) {
    const hw::MigDevice& mig = gpu.mig_devices[mig_index];
    const std::string name = absl::StrCat(gpu.index, ":", mig_index);
    const std::string owner = absl::StrCat(
        "MIG device ", name, mig.uuid.empty() ? "" : absl::StrCat(" (", mig.uuid, ")"));
    const unsigned int minor = *gpu.minor_number;
    ContainerEdits edits{.device_nodes = {gpu_node}};
    for (const bool compute : {false, true}) {
      absl::StatusOr<unsigned int> cap =
          compute ? caps_.ComputeInstance(minor, mig.gpu_instance_id, mig.compute_instance_id)
                  : caps_.GpuInstance(minor, mig.gpu_instance_id);
      if (!cap.ok()) {
        if (!absl::IsNotFound(cap.status()) && !absl::IsInvalidArgument(cap.status())) {
          return cap.status();
        }
        Warn(absl::StrCat(owner, " left out: ", cap.status().message()));
        return absl::OkStatus();
      }
      GPUOP_ASSIGN_OR_RETURN(const std::optional<DeviceNode> node,
                             Node(absl::StrCat("nvidia-caps/nvidia-cap", *cap), owner));
      if (!node.has_value()) return absl::OkStatus();
      edits.device_nodes.push_back(*node);
    }
    AddDevice(name, mig.uuid, edits);
    return absl::OkStatus();
  }

  // Adds the device under its index name and, when it is a valid device name, its UUID. Drivers
  // before R470 report MIG UUIDs as "MIG-GPU-<uuid>/<gi>/<ci>", which CDI cannot name.
  void AddDevice(const std::string& name, const std::string& uuid, const ContainerEdits& edits) {
    out_.spec.devices.push_back({.name = name, .container_edits = edits});
    if (uuid.empty()) return;
    if (absl::Status valid = ValidateDeviceName(uuid); !valid.ok()) {
      Warn(absl::StrCat("device ", name, " is published by index only: ", valid.message()));
      return;
    }
    out_.spec.devices.push_back({.name = uuid, .container_edits = edits});
  }

  void Warn(std::string warning) { out_.warnings.push_back(std::move(warning)); }

  const NvidiaCdiOptions& options_;
  GeneratedSpec& out_;
  MigCapResolver caps_;
};

}  // namespace

NvidiaCdiGenerator::NvidiaCdiGenerator(NvidiaCdiOptions options) : options_(std::move(options)) {}

absl::StatusOr<GeneratedSpec> NvidiaCdiGenerator::Generate(const hw::Inventory& inventory) const {
  const std::string kind = absl::StrCat(options_.vendor, "/", options_.device_class);
  if (absl::Status status = ValidateKind(kind); !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("NVIDIA CDI: ", status.message()));
  }
  GPUOP_RETURN_IF_ERROR(RequireAbsolute("device root", options_.dev_root));
  GPUOP_RETURN_IF_ERROR(RequireAbsolute("proc root", options_.proc_root));
  if (!options_.hook_path.empty()) {
    GPUOP_RETURN_IF_ERROR(RequireAbsolute("hook path", options_.hook_path));
  }
  for (const hw::Gpu& gpu : inventory.gpus) {
    if (gpu.vendor != hw::Vendor::kNvidia) {
      return absl::InvalidArgumentError(absl::StrCat("NVIDIA CDI: ", Describe(gpu),
                                                     " is from vendor ", hw::VendorName(gpu.vendor),
                                                     "; pass the NVIDIA backend's inventory"));
    }
  }

  GeneratedSpec out;
  out.spec.kind = kind;
  Builder builder(options_, out);
  for (const hw::Gpu& gpu : inventory.gpus) GPUOP_RETURN_IF_ERROR(builder.AddGpu(gpu));
  if (out.spec.devices.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("NVIDIA CDI: no device to describe among ", inventory.gpus.size(), " GPU(s)",
                     out.warnings.empty() ? "" : ": ", absl::StrJoin(out.warnings, "; ")));
  }
  if (options_.all_device) out.spec.devices.push_back(AllDevice(out.spec.devices));
  GPUOP_RETURN_IF_ERROR(builder.AddCommon(inventory.driver_version));
  if (absl::Status status = FinishSpec(out.spec); !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("NVIDIA CDI: ", status.message()));
  }
  return out;
}

}  // namespace gpuop::agent::cdi
