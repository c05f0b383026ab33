// gpuop-agent exporter: GPU telemetry in dcgm-exporter's names and labels on /metrics until
// SIGTERM.
#include "agent/exporter/exporter.h"

#include <cstdio>
#include <cstdlib>

#include "cmd/gpuop-agent/accelerators.h"
#include "cmd/gpuop-agent/commands.h"
#include "common/signals.h"

namespace gpuop::cmd {

void AddExporterCommand(CLI::App& app) {
  struct Flags {
    HardwareFlags hardware;
    std::string listen = ":9400";
    int interval_seconds = 10;
    std::string pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
    std::string node_name;
    bool virtual_gpus = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "exporter", "Export GPU telemetry in Prometheus format (dcgm-exporter's metrics)");
  AddHardwareFlags(*sub, flags->hardware);
  sub->add_option("--listen", flags->listen, "host:port for /metrics and /healthz")
      ->capture_default_str();
  sub->add_option("--interval", flags->interval_seconds,
                  "Seconds between samples; scrapes serve the latest one")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  sub->add_option("--pod-resources-socket", flags->pod_resources_socket,
                  "The kubelet's PodResources socket, for pod labels (empty: none)")
      ->capture_default_str();
  AddNodeNameFlag(*sub, flags->node_name, "the Hostname label");
  sub->add_flag("--kubernetes-virtual-gpus", flags->virtual_gpus,
                "A GPU shared by several pods (time-slicing, MPS) gets one series per pod, as "
                "dcgm-exporter's flag of that name; by default one per GPU, with one pod's labels")
      ->envname("KUBERNETES_VIRTUAL_GPUS");
  sub->callback([flags] {
    common::BlockTerminationSignals();
    // Its own NVML handles: hardware events are consumed by whoever waits for them.
    auto accelerators = OpenAccelerators(flags->hardware);
    std::vector<hw::Accelerator*> raw;
    for (auto& a : accelerators) raw.push_back(a.get());
    agent::exporter::Exporter exporter({.listen_address = flags->listen,
                                        .interval = absl::Seconds(flags->interval_seconds),
                                        .pod_resources_socket = flags->pod_resources_socket,
                                        .node_name = flags->node_name,
                                        .series_per_holder = flags->virtual_gpus,
                                        .accelerators = raw});
    if (absl::Status started = exporter.Start(); !started.ok()) {
      std::fprintf(stderr, "exporter: %s\n", started.ToString().c_str());
      std::exit(1);
    }
    std::fprintf(stderr, "exporter: serving /metrics on port %d\n", exporter.port());
    const int sig = common::WaitForTerminationSignal();
    std::fprintf(stderr, "exporter: signal %d, stopping\n", sig);
    exporter.Stop();
  });
}

}  // namespace gpuop::cmd
