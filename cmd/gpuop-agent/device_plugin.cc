// gpuop-agent device-plugin: serves the node's GPUs to the kubelet until SIGTERM.
#include <cstdio>

#include "agent/deviceplugin/agent.h"
#include "cmd/gpuop-agent/accelerators.h"
#include "cmd/gpuop-agent/commands.h"
#include "common/signals.h"

namespace gpuop::cmd {

void AddDevicePluginCommand(CLI::App& app) {
  struct Flags {
    HardwareFlags hardware;
    std::string plugin_dir = "/var/lib/kubelet/device-plugins";
    std::string config_dir;
    std::string config_name = "default";
    int recover_after_seconds = 600;
    std::vector<uint64_t> ignore_xids = {13, 31, 43, 45, 68, 109};
    std::string layout_file;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand("device-plugin",
                                     "Serve the kubelet device plugin API for the node's GPUs");
  AddHardwareFlags(*sub, flags->hardware);
  sub->add_option("--plugin-dir", flags->plugin_dir, "The kubelet's device plugin directory")
      ->capture_default_str();
  sub->add_option("--config-dir", flags->config_dir,
                  "Directory of named configurations (a mounted ConfigMap); defaults when unset");
  sub->add_option("--config-name", flags->config_name, "Configuration to use")
      ->capture_default_str();
  sub->add_option("--recover-after", flags->recover_after_seconds,
                  "Seconds without a new XID or ECC error before a GPU is healthy again (0: never)")
      ->capture_default_str();
  sub->add_option("--ignore-xids", flags->ignore_xids,
                  "XIDs that do not make a GPU unhealthy (application errors)")
      ->delimiter(',')
      ->capture_default_str();
  sub->add_option("--layout-file", flags->layout_file,
                  "File the MIG manager rewrites after a layout change (re-plans at once)");
  sub->callback([flags] {
    common::BlockTerminationSignals();
    auto accelerators = OpenAccelerators(flags->hardware);
    std::vector<hw::Accelerator*> raw;
    for (auto& a : accelerators) raw.push_back(a.get());
    agent::ConfigSource source(flags->config_dir, flags->config_name);
    agent::DevicePluginAgent plugin(
        raw, source,
        {.manager = {.plugin_dir = flags->plugin_dir},
         .health = {.ignored_xids = {flags->ignore_xids.begin(), flags->ignore_xids.end()},
                    .recover_after = absl::Seconds(flags->recover_after_seconds)},
         .layout_file = flags->layout_file});
    if (absl::Status started = plugin.Start(); !started.ok()) {
      std::fprintf(stderr, "device-plugin: %s\n", started.ToString().c_str());
      std::exit(1);
    }
    for (const auto& resource : plugin.manager().resources()) {
      std::fprintf(stderr, "device-plugin: serving %s\n", resource.c_str());
    }
    for (const auto& warning : plugin.plan().warnings) {
      std::fprintf(stderr, "device-plugin: %s\n", warning.c_str());
    }
    const int sig = common::WaitForTerminationSignal();
    std::fprintf(stderr, "device-plugin: signal %d, stopping\n", sig);
    plugin.Stop();
  });
}

}  // namespace gpuop::cmd
