// gpuop-agent health: watches GPU health, isolates bad devices through the health file and
// publishes the GPUHealthy Node condition and Events until SIGTERM.
#include <cstdio>
#include <cstdlib>

#include "agent/health/monitor.h"
#include "agent/health/node_publisher.h"
#include "cmd/gpuop-agent/accelerators.h"
#include "cmd/gpuop-agent/commands.h"
#include "common/signals.h"

namespace gpuop::cmd {

void AddHealthCommand(CLI::App& app) {
  struct Flags {
    HardwareFlags hardware;
    HealthPolicyFlags health;
    std::string node_name;
    std::string pod_name;
    std::string kubeconfig;
    std::string health_file = "/run/gpuop/gpu-health.json";
    std::string state_file = "/run/gpuop/health-state.json";
    int sample_seconds = 10;
  };
  auto flags = std::make_shared<Flags>();
  if (const char* pod = std::getenv("POD_NAME")) flags->pod_name = pod;
  CLI::App* sub = app.add_subcommand(
      "health", "Watch GPU health, isolate bad GPUs and publish the GPUHealthy node condition");
  AddHardwareFlags(*sub, flags->hardware);
  AddHealthPolicyFlags(*sub, flags->health);
  AddNodeNameFlag(*sub, flags->node_name,
                  "the Node that gets the condition and Events; none when unset (local only)");
  sub->add_option("--pod-name", flags->pod_name, "This pod ($POD_NAME), as the Events' reporter");
  sub->add_option("--kubeconfig", flags->kubeconfig, "Kubeconfig; in-cluster when unset");
  sub->add_option("--state-file", flags->state_file,
                  "Where the conditions waiting for a reset or a reboot are kept across restarts "
                  "(empty: not kept)")
      ->capture_default_str();
  sub->add_option("--health-file", flags->health_file,
                  "Where the verdicts go for the device plugin (empty: nowhere)")
      ->capture_default_str();
  sub->add_option("--sample-interval", flags->sample_seconds,
                  "Seconds between samples of the slow signals (temperature, row remapping)")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  sub->callback([flags] {
    common::BlockTerminationSignals();
    auto accelerators = OpenAccelerators(flags->hardware);
    std::vector<hw::Accelerator*> raw;
    for (auto& a : accelerators) raw.push_back(a.get());

    std::unique_ptr<kube::Client> client;
    std::unique_ptr<kube::ClientEventSink> sink;
    std::unique_ptr<agent::NodeHealthPublisher> publisher;
    if (!flags->node_name.empty()) {
      absl::StatusOr<std::unique_ptr<kube::Client>> made =
          MakeClient(flags->kubeconfig, "agent-health");
      if (!made.ok()) {
        std::fprintf(stderr, "health: %s\n", made.status().ToString().c_str());
        std::exit(1);
      }
      client = *std::move(made);
      sink = std::make_unique<kube::ClientEventSink>(*client);
      publisher = std::make_unique<agent::NodeHealthPublisher>(
          *client, *sink,
          agent::NodeHealthPublisherOptions{.node_name = flags->node_name,
                                            .reporting_instance = flags->pod_name});
      publisher->Start();
    } else {
      std::fprintf(stderr, "health: no --node-name: verdicts stay on this node\n");
    }
    agent::HealthMonitorOptions options;
    options.watch.policy = flags->health.Policy();
    options.watch.sample_interval = absl::Seconds(flags->sample_seconds);
    options.health_file = flags->health_file;
    options.state_file = flags->state_file;
    agent::NodeRecoveryEvidence evidence(flags->health.evidence);
    options.watch.evidence = &evidence;
    agent::HealthMonitor monitor(raw, options,
                                 [&publisher](const agent::HealthReport& report,
                                              std::vector<agent::HealthTransition> transitions) {
                                   if (publisher) publisher->Update(report, std::move(transitions));
                                 });
    if (absl::Status started = monitor.Start(); !started.ok()) {
      std::fprintf(stderr, "health: %s\n", started.ToString().c_str());
      std::exit(1);
    }
    const agent::HealthReport report = monitor.report();
    std::fprintf(stderr, "health: watching %zu GPUs, %d unhealthy\n", report.devices.size(),
                 report.unhealthy_count());
    const int sig = common::WaitForTerminationSignal();
    std::fprintf(stderr, "health: signal %d, stopping\n", sig);
    monitor.Stop();
    if (publisher) {
      publisher->WaitUntilPublished(absl::Seconds(5));
      publisher->Stop();
    }
  });
}

}  // namespace gpuop::cmd
