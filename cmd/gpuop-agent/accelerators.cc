#include "cmd/gpuop-agent/accelerators.h"

#include <cstdio>
#include <filesystem>
#include <thread>

#include "common/signals.h"
#include "hw/amd/amd_accelerator.h"
#include "hw/nvml/driver_library.h"
#include "hw/nvml/nvml_accelerator.h"
#include "kube/config/rest_config.h"

namespace gpuop::cmd {

std::string HardwareFlags::DriverContainerRoot() const {
  if (!driver_container_root.empty()) return driver_container_root;
  return (std::filesystem::path(host_root) / "run/nvidia/driver").string();
}

std::string HardwareFlags::Library(const std::string& flag, const char* soname) const {
  if (flag != hw::kAutoLibrary) return flag;
  return hw::ResolveDriverLibrary(soname, {.roots = {DriverContainerRoot(), host_root}});
}

std::string HardwareFlags::NvmlLibrary() const { return Library(nvml_library, hw::kNvmlSoname); }

void AddHardwareFlags(CLI::App& command, HardwareFlags& flags) {
  command
      .add_option("--nvml-library", flags.nvml_library,
                  "NVML library to load: auto (libnvidia-ml.so.1 from the driver container's "
                  "root, else the host's, else the loader's path), or a path (the fake)")
      ->capture_default_str();
  command.add_option("--host-root", flags.host_root, "Where the host's root is mounted")
      ->capture_default_str();
  command.add_option("--driver-container-root", flags.driver_container_root,
                     "Where gpuop's driver container exposes its root (default: "
                     "<host-root>/run/nvidia/driver)");
  command.add_option("--sysfs-root", flags.sysfs_root, "Where the host's sysfs is mounted")
      ->capture_default_str();
  command.add_option("--dev-root", flags.dev_root, "Where the host's /dev is mounted")
      ->capture_default_str();
}

agent::HealthPolicy HealthPolicyFlags::Policy() const {
  const auto env = [](const char* name) -> std::optional<std::string> {
    const char* value = std::getenv(name);
    return value == nullptr ? std::nullopt : std::optional<std::string>(value);
  };
  // Checked by the flag's validator: a bad value never gets here.
  std::map<uint64_t, agent::XidAction> actions =
      agent::ParseXidActions(xid_actions).value_or(std::map<uint64_t, agent::XidAction>{});
  agent::XidChecks checks =
      agent::ResolveXidChecks({.actions = std::move(actions),
                               .ignore_xids = ignore_xids,
                               .replace_default_ignored = replace_default_ignored_xids,
                               .disable = env("DP_DISABLE_HEALTHCHECKS"),
                               .enable = env("DP_ENABLE_HEALTHCHECKS")});
  for (const std::string& entry : checks.skipped) {
    std::fprintf(stderr,
                 "health: ignoring \"%s\" in DP_DISABLE_HEALTHCHECKS/DP_ENABLE_HEALTHCHECKS: not "
                 "an XID, \"all\" or \"xids\"\n",
                 entry.c_str());
  }
  return {.xid_checks = std::move(checks)};
}

void AddHealthPolicyFlags(CLI::App& command, HealthPolicyFlags& flags) {
  command
      .add_option("--xid-actions", flags.xid_actions,
                  "What XIDs ask for, replacing NVIDIA's XID catalogue for them: "
                  "<XID>=<Ignore|RestartApp|ResetGpu|RebootNode|ContactSupport>, comma-separated")
      ->check([](const std::string& value) {
        absl::StatusOr<std::map<uint64_t, agent::XidAction>> parsed = agent::ParseXidActions(value);
        return parsed.ok() ? std::string() : std::string(parsed.status().message());
      });
  command
      .add_option("--driver-ready-file", flags.evidence.driver_ready,
                  "The driver container's ready file: a driver loaded after a GPU needed a reset "
                  "ends that need")
      ->capture_default_str();
  command
      .add_option("--gpu-reset-dir", flags.evidence.reset_dir,
                  "Where the components that reset a GPU record it (one file per GPU UUID)")
      ->capture_default_str();
  command
      .add_option("--ignore-xids", flags.ignore_xids,
                  "More XIDs that do not make a GPU unhealthy, besides the application errors "
                  "13, 31, 43, 45, 68 and 109 (DP_DISABLE_HEALTHCHECKS and DP_ENABLE_HEALTHCHECKS "
                  "apply too, as in NVIDIA's device plugin)")
      ->delimiter(',');
  command.add_flag("--replace-default-ignored-xids", flags.replace_default_ignored_xids,
                   "--ignore-xids replaces the default ignored XIDs instead of adding to them");
}

std::unique_ptr<kube::Client> ClientUntilSignal(const std::string& kubeconfig,
                                                const std::string& component, const char* command,
                                                std::stop_source stop) {
  common::BlockTerminationSignals();
  absl::StatusOr<std::unique_ptr<kube::Client>> client = MakeClient(kubeconfig, component);
  if (!client.ok()) {
    std::fprintf(stderr, "%s: %s\n", command, client.status().ToString().c_str());
    std::exit(1);
  }
  std::thread([stop]() mutable {
    common::WaitForTerminationSignal();
    stop.request_stop();
  }).detach();
  return *std::move(client);
}

void AddNodeNameFlag(CLI::App& command, std::string& node_name, const std::string& purpose) {
  if (const char* node = std::getenv("NODE_NAME")) node_name = node;
  command.add_option("--node-name", node_name, "This node ($NODE_NAME): " + purpose);
}

absl::StatusOr<std::unique_ptr<kube::Client>> MakeClient(const std::string& kubeconfig,
                                                         const std::string& component) {
  absl::StatusOr<kube::RestConfig> config = kube::LoadDefaultConfig(kubeconfig);
  if (!config.ok()) return config.status();
  auto rest = kube::RestClient::Create(*config, {.component = component});
  if (!rest.ok()) return rest.status();
  return std::make_unique<kube::Client>(std::shared_ptr<kube::RestClient>(*std::move(rest)));
}

hw::NvidiaSmi HardwareFlags::NvidiaSmiInDriverRoot(const std::string& nvml_path) const {
  // nvidia-smi runs in the root the NVML library came from; a library the loader found (the
  // soname) is this container's own, and nvidia-smi then too.
  for (const std::string& root : {DriverContainerRoot(), host_root}) {
    const std::filesystem::path relative =
        std::filesystem::path(nvml_path).lexically_relative(root);
    if (root != "/" && !relative.empty() && *relative.begin() != "..") return {.root = root};
  }
  return {};
}

std::vector<std::unique_ptr<hw::Accelerator>> OpenAccelerators(const HardwareFlags& flags) {
  std::vector<std::unique_ptr<hw::Accelerator>> out;
  const std::string library = flags.NvmlLibrary();
  const hw::NvidiaSmi smi = flags.NvidiaSmiInDriverRoot(library);
  auto nvml = hw::NvmlAccelerator::Open(
      {.library_path = library,
       .sysfs_root = flags.sysfs_root,
       .reset_gpus = [smi](const std::vector<std::string>& ids) { return smi.Reset(ids); },
       .create_mig_device_nodes = [smi] { return smi.CreateDeviceNodes(); }});
  if (nvml.ok()) {
    out.push_back(*std::move(nvml));
  } else {
    std::fprintf(stderr, "nvidia: %s\n", std::string(nvml.status().message()).c_str());
  }
  auto amd = std::make_unique<hw::AmdAccelerator>(
      hw::AmdOptions{.sysfs_root = flags.sysfs_root, .dev_root = flags.dev_root});
  auto inventory = amd->Discover();
  if (inventory.ok() && !inventory->gpus.empty()) out.push_back(std::move(amd));
  return out;
}

}  // namespace gpuop::cmd
