// gpuop-agent mps-daemon: runs an MPS control daemon for each resource the device plugin
// configuration shares with MPS, until SIGTERM.
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/cdi/driver_files.h"
#include "agent/deviceplugin/config_source.h"
#include "agent/mps/control.h"
#include "agent/mps/manager.h"
#include "cmd/gpuop-agent/accelerators.h"
#include "cmd/gpuop-agent/commands.h"
#include "cmd/gpuop-agent/config_label.h"
#include "common/signals.h"
#include "hw/model.h"

namespace gpuop::cmd {

void AddMpsDaemonCommand(CLI::App& app) {
  struct Flags {
    HardwareFlags hardware;
    std::string config_dir;
    std::string config_name = "default";
    std::string mps_root = agent::mps::kContainerRoot;
    std::string mps_host_root = agent::kDefaultMpsRoot;
    std::string driver_root = "auto";
    int health_interval_seconds = 30;
    std::string node_name;
    std::string kubeconfig;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "mps-daemon", "Run the MPS control daemons of the resources shared with MPS (sharing.mps)");
  AddHardwareFlags(*sub, flags->hardware);
  sub->add_option("--config-dir", flags->config_dir,
                  "Directory of named device plugin configurations (a mounted ConfigMap)");
  sub->add_option("--config-name", flags->config_name, "Configuration to use")
      ->capture_default_str();
  sub->add_option("--mps-root", flags->mps_root, "Where this process sees the host's MPS root")
      ->capture_default_str();
  sub->add_option("--mps-host-root", flags->mps_host_root,
                  "The host path of that directory (a configuration's flags.mpsRoot must be it)")
      ->capture_default_str();
  sub->add_option("--driver-root", flags->driver_root,
                  "The driver root as the host sees it, where nvidia-cuda-mps-control is; auto: "
                  "the driver container's when it has one, else /")
      ->capture_default_str();
  sub->add_option("--health-interval", flags->health_interval_seconds,
                  "Seconds between health checks of each daemon")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  AddNodeNameFlag(*sub, flags->node_name,
                  "its label nvidia.com/device-plugin.config picks the configuration");
  sub->add_option("--kubeconfig", flags->kubeconfig, "Kubeconfig; in-cluster when unset");
  sub->callback([flags] {
    common::BlockTerminationSignals();
    std::string driver_root = flags->driver_root;
    if (driver_root == "auto") {
      std::error_code ec;
      driver_root = std::filesystem::is_directory(
                        std::filesystem::path(flags->hardware.DriverContainerRoot()) / "usr", ec)
                        ? "/run/nvidia/driver"
                        : "/";
    }
    const std::filesystem::path seen = std::filesystem::path(flags->hardware.host_root) /
                                       std::filesystem::path(driver_root).relative_path();
    // Where the driver keeps its binaries and libraries, as gpuop's CDI spec finds them.
    const agent::cdi::DriverFilesOptions driver_layout;
    absl::StatusOr<std::filesystem::path> binary =
        agent::mps::FindControlProgram(seen, driver_layout.binary_dirs);
    if (!binary.ok()) {
      std::fprintf(stderr, "mps-daemon: %s\n", binary.status().ToString().c_str());
      std::exit(1);
    }
    std::unique_ptr<hw::Accelerator> nvidia;
    for (auto& accelerator : OpenAccelerators(flags->hardware)) {
      if (accelerator->vendor() == hw::Vendor::kNvidia) nvidia = std::move(accelerator);
    }
    if (nvidia == nullptr) {
      std::fprintf(stderr, "mps-daemon: no NVIDIA GPUs (NVML did not load)\n");
      std::exit(1);
    }
    // The control daemon starts nvidia-cuda-mps-server from the driver, which needs the driver's
    // libraries: this container has none of its own.
    std::vector<std::string> library_path;
    for (const std::string& dir : driver_layout.library_dirs) {
      std::error_code ec;
      if (std::filesystem::is_directory(seen / dir, ec))
        library_path.push_back((seen / dir).string());
    }
    agent::mps::ProcessControlProgram control(
        *binary, std::filesystem::temp_directory_path(), absl::Seconds(30),
        {absl::StrCat("PATH=", binary->parent_path().string(), ":/usr/bin:/bin"),
         absl::StrCat("LD_LIBRARY_PATH=", absl::StrJoin(library_path, ":"))});
    agent::ConfigSource source(flags->config_dir, flags->config_name);
    agent::mps::Manager manager(*nvidia, control, source,
                                {.root = flags->mps_root,
                                 .host_root = flags->mps_host_root,
                                 .health_interval = absl::Seconds(flags->health_interval_seconds)});
    if (absl::Status started = manager.Start(); !started.ok()) {
      std::fprintf(stderr, "mps-daemon: %s\n", started.ToString().c_str());
      std::exit(1);
    }
    auto label = std::make_unique<ConfigLabelFollower>(flags->node_name, flags->kubeconfig,
                                                       "agent-mps-daemon", "mps-daemon", source,
                                                       [&manager] { return manager.Apply(); });
    const int sig = common::WaitForTerminationSignal();
    std::fprintf(stderr, "mps-daemon: signal %d, quitting the daemons\n", sig);
    label.reset();
    manager.Stop();
  });
}

}  // namespace gpuop::cmd
