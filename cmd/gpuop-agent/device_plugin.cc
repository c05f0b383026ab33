// gpuop-agent device-plugin: serves the node's GPUs to the kubelet until SIGTERM.
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "agent/cdi/kinds.h"
#include "agent/deviceplugin/agent.h"
#include "cmd/gpuop-agent/accelerators.h"
#include "cmd/gpuop-agent/commands.h"
#include "cmd/gpuop-agent/config_label.h"
#include "common/signals.h"

namespace gpuop::cmd {

void AddDevicePluginCommand(CLI::App& app) {
  struct Flags {
    HardwareFlags hardware;
    std::string plugin_dir = "/var/lib/kubelet/device-plugins";
    std::string config_dir;
    std::string config_name = "default";
    HealthPolicyFlags health;
    std::string layout_file;
    std::string health_file = "/run/gpuop/gpu-health.json";
    std::string node_name;
    std::string kubeconfig;
    bool cdi_enabled = true;
    std::string cdi_dir = "/var/run/cdi";
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
  AddHealthPolicyFlags(*sub, flags->health);
  sub->add_option("--layout-file", flags->layout_file,
                  "File the MIG manager rewrites after a layout change (re-plans at once)");
  sub->add_option("--health-file", flags->health_file,
                  "The health monitor's verdicts, honoured as they change (empty: none)")
      ->capture_default_str();
  AddNodeNameFlag(*sub, flags->node_name,
                  "its label nvidia.com/device-plugin.config picks the configuration");
  sub->add_option("--kubeconfig", flags->kubeconfig, "Kubeconfig; in-cluster when unset");
  sub->add_option("--cdi-enabled", flags->cdi_enabled,
                  "Whether gpuop's CDI component runs on the node; false serves the CDI device "
                  "list strategies as envvar")
      ->capture_default_str();
  sub->add_option("--cdi-dir", flags->cdi_dir,
                  "The host's CDI spec directory (under --host-root), for the `both` fallback")
      ->capture_default_str();
  sub->callback([flags] {
    common::BlockTerminationSignals();
    auto accelerators = OpenAccelerators(flags->hardware);
    std::vector<hw::Accelerator*> raw;
    for (auto& a : accelerators) raw.push_back(a.get());
    agent::ConfigSource source(flags->config_dir, flags->config_name);
    agent::NodeRecoveryEvidence evidence(flags->health.evidence);
    agent::DevicePluginAgent plugin(
        raw, source,
        {.manager = {.plugin_dir = flags->plugin_dir},
         .health = {.policy = flags->health.Policy(),
                    .external_file = flags->health_file,
                    .evidence = &evidence},
         .layout_file = flags->layout_file,
         .cdi_enabled = flags->cdi_enabled,
         .cdi_spec = std::filesystem::path(flags->hardware.host_root) /
                     std::filesystem::path(flags->cdi_dir).relative_path() /
                     agent::cdi::kNvidiaSpecFileName,
         .host_root = flags->hardware.host_root});
    if (absl::Status started = plugin.Start(); !started.ok()) {
      std::fprintf(stderr, "device-plugin: %s\n", started.ToString().c_str());
      std::exit(1);
    }
    // The node's label picks the configuration, as with NVIDIA's plugin.
    auto label = std::make_unique<ConfigLabelFollower>(
        flags->node_name, flags->kubeconfig, "agent-device-plugin", "device-plugin", source,
        [&plugin] { return plugin.Replan(); });
    for (const auto& resource : plugin.manager().resources()) {
      std::fprintf(stderr, "device-plugin: serving %s\n", resource.c_str());
    }
    if (absl::Status problem = plugin.last_error(); !problem.ok()) {
      // A configuration that did not load, or a MIG layout that does not fit strategy single:
      // the plugin keeps running and picks up the fix.
      std::fprintf(stderr, "device-plugin: %s\n", problem.ToString().c_str());
    }
    const int sig = common::WaitForTerminationSignal();
    std::fprintf(stderr, "device-plugin: signal %d, stopping\n", sig);
    label.reset();
    plugin.Stop();
  });
}

}  // namespace gpuop::cmd
