// gpuop-agent driver-safe-load: the driver pod's first step (agent/driver/safe_load.h).
#include <cstdio>
#include <cstdlib>
#include <stop_token>

#include "agent/driver/safe_load.h"
#include "cmd/gpuop-agent/accelerators.h"
#include "cmd/gpuop-agent/commands.h"

namespace gpuop::cmd {

void AddDriverSafeLoadCommand(CLI::App& app) {
  struct Flags {
    agent::SafeLoadOptions options;
    std::string kubeconfig;
    int poll_seconds = 2;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "driver-safe-load",
      "Before a driver container loads: when a driver is already loaded on the node, ask the "
      "operator to drain the node (annotation gpuop.io/driver-wait-for-safe-load) and wait until "
      "it has");
  AddNodeNameFlag(*sub, flags->options.node_name, "the Node of this driver pod");
  sub->add_option("--pod-name", flags->options.pod_name, "This driver pod ($POD_NAME)")
      ->envname("POD_NAME");
  sub->add_option("--module-dir", flags->options.paths.module_dir,
                  "The NVIDIA kernel module's sysfs directory")
      ->capture_default_str();
  sub->add_option("--driver-root", flags->options.paths.driver_root,
                  "Where driver containers publish their root")
      ->capture_default_str();
  sub->add_option("--poll-seconds", flags->poll_seconds, "How often to look at the Node")
      ->check(CLI::Range(1, 60))
      ->capture_default_str();
  sub->add_option("--kubeconfig", flags->kubeconfig, "Kubeconfig; in-cluster when unset");
  sub->callback([flags] {
    if (flags->options.node_name.empty() || flags->options.pod_name.empty()) {
      std::fprintf(stderr,
                   "driver-safe-load: --node-name ($NODE_NAME) and --pod-name ($POD_NAME) are "
                   "required\n");
      std::exit(2);
    }
    flags->options.poll = absl::Seconds(flags->poll_seconds);
    std::stop_source stop;
    const std::unique_ptr<kube::Client> client =
        ClientUntilSignal(flags->kubeconfig, "agent-driver", "driver-safe-load", stop);
    const absl::Status done = agent::WaitForSafeLoad(*client, flags->options, stop.get_token());
    std::fflush(stdout);
    if (!done.ok()) {
      std::fprintf(stderr, "driver-safe-load: %s\n", done.ToString().c_str());
      std::exit(1);
    }
    std::exit(0);
  });
}

}  // namespace gpuop::cmd
