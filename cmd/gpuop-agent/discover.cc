// gpuop-agent discover: the node's GPUs, their topology and one telemetry sample.
#include "agent/discover/discover.h"

#include <cstdio>
#include <iostream>

#include "cmd/gpuop-agent/accelerators.h"
#include "cmd/gpuop-agent/commands.h"

namespace gpuop::cmd {

void AddDiscoverCommand(CLI::App& app) {
  struct Flags {
    std::string output = "table";
    HardwareFlags hardware;
    bool no_sample = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "discover", "Print the node's GPUs, their topology and one telemetry sample");
  sub->add_option("-o,--output", flags->output, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  AddHardwareFlags(*sub, flags->hardware);
  sub->add_flag("--no-sample", flags->no_sample, "Inventory only, no telemetry");
  sub->callback([flags] {
    absl::StatusOr<agent::NodeReport> report =
        agent::DiscoverNode({.nvml_library = flags->hardware.nvml_library,
                             .sysfs_root = flags->hardware.sysfs_root,
                             .take_sample = !flags->no_sample});
    if (!report.ok()) {
      std::fprintf(stderr, "discover: %s\n", report.status().ToString().c_str());
      std::exit(1);
    }
    if (flags->output == "json") {
      std::cout << agent::RenderJson(*report).dump(2) << "\n";
    } else {
      std::cout << agent::RenderTable(*report);
    }
  });
}

}  // namespace gpuop::cmd
