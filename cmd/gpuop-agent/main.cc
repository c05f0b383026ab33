// gpuop-agent: the per-node agent. One binary, one subcommand per node component; the operator
// runs each component as its own DaemonSet.
#include <cstdio>
#include <iostream>

#include "agent/discover/discover.h"
#include "common/cli.h"

namespace {

// `gpuop-agent discover`: the node's GPUs, topology and one telemetry sample.
void AddDiscover(CLI::App& app) {
  struct Flags {
    std::string output = "table";
    gpuop::agent::DiscoverOptions options;
    bool no_sample = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "discover", "Print the node's GPUs, their topology and one telemetry sample");
  sub->add_option("-o,--output", flags->output, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  sub->add_option("--nvml-library", flags->options.nvml_library,
                  "NVML library to load (a driver root's copy, or the fake)")
      ->capture_default_str();
  sub->add_option("--sysfs-root", flags->options.sysfs_root, "Where sysfs is mounted")
      ->capture_default_str();
  sub->add_flag("--no-sample", flags->no_sample, "Inventory only, no telemetry");
  sub->callback([flags] {
    flags->options.take_sample = !flags->no_sample;
    absl::StatusOr<gpuop::agent::NodeReport> report = gpuop::agent::DiscoverNode(flags->options);
    if (!report.ok()) {
      std::fprintf(stderr, "discover: %s\n", report.status().ToString().c_str());
      std::exit(1);
    }
    if (flags->output == "json") {
      std::cout << gpuop::agent::RenderJson(*report).dump(2) << "\n";
    } else {
      std::cout << gpuop::agent::RenderTable(*report);
    }
  });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "gpuop node agent: makes a node's GPUs discoverable, schedulable, monitored and "
      "healthy.",
      "gpuop-agent"};
  app.require_subcommand(0, 1);
  gpuop::common::AddVersionFlag(app, "gpuop-agent");
  AddDiscover(app);
  using gpuop::common::AddPlannedSubcommand;
  AddPlannedSubcommand(app, "labels", "Discover GPUs and keep the node's GPU labels current");
  AddPlannedSubcommand(app, "device-plugin",
                       "Serve the kubelet device plugin API for the node's GPUs");
  AddPlannedSubcommand(app, "dra-plugin",
                       "Serve the kubelet DRA plugin API and publish ResourceSlices");
  AddPlannedSubcommand(app, "cdi", "Generate CDI specs for the node's GPUs");
  AddPlannedSubcommand(app, "runtime-config", "Configure containerd or CRI-O for GPU containers");
  AddPlannedSubcommand(app, "exporter", "Export GPU telemetry in Prometheus format");
  AddPlannedSubcommand(app, "health", "Watch GPU health and publish node conditions");
  AddPlannedSubcommand(app, "validate", "Prove the driver, runtime and CUDA stack work");
  AddPlannedSubcommand(app, "mig", "Apply the requested MIG partition layout");
  AddPlannedSubcommand(app, "power", "Manage GPU power limits");
  return gpuop::common::RunCli(app, argc, argv);
}
