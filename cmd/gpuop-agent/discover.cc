// gpuop-agent discover: the node's GPUs, their topology and one telemetry sample.
// gpuop-agent discover-pci: whether the node has NVIDIA or AMD GPUs, from PCI sysfs alone, and
// with --label-node its Node's gpuop.io/gpu.present and gpu.vendor labels.
#include "agent/discover/discover.h"

#include <cstdio>
#include <iostream>
#include <map>
#include <stop_token>

#include "agent/discover/pci_node.h"
#include "cmd/gpuop-agent/accelerators.h"
#include "cmd/gpuop-agent/commands.h"
#include "common/clock.h"

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
        agent::DiscoverNode({.nvml_library = flags->hardware.NvmlLibrary(),
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

void AddDiscoverPciCommand(CLI::App& app) {
  struct Flags {
    std::string sysfs_root = "/sys";
    std::string os_release;
    bool label_node = false;
    bool once = false;
    std::string node_name;
    std::string kubeconfig;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "discover-pci",
      "Find NVIDIA and AMD GPUs on the PCI bus (no driver needed) and label the Node "
      "gpuop.io/gpu.present and gpuop.io/gpu.vendor");
  sub->add_option("--sysfs-root", flags->sysfs_root, "Where the host's sysfs is mounted")
      ->capture_default_str();
  sub->add_option("--os-release", flags->os_release,
                  "The host's os-release file: its ID and VERSION_ID are labelled too");
  sub->add_flag("--label-node", flags->label_node,
                "Write the labels on the Node (retrying until it succeeds), then stay up until "
                "SIGTERM: the DaemonSet controller removes the pod once the label is there");
  sub->add_flag("--once", flags->once, "With --label-node: exit once the labels are written");
  AddNodeNameFlag(*sub, flags->node_name, "the Node to label");
  sub->add_option("--kubeconfig", flags->kubeconfig, "Kubeconfig; in-cluster when unset");
  sub->callback([flags] {
    if (!flags->label_node) {
      absl::StatusOr<agent::PciNodeVerdict> verdict = agent::ScanPciNode(flags->sysfs_root);
      if (!verdict.ok()) {
        std::fprintf(stderr, "discover-pci: %s\n", verdict.status().ToString().c_str());
        std::exit(1);
      }
      for (const std::string& problem : verdict->problems) {
        std::fprintf(stderr, "discover-pci: %s\n", problem.c_str());
      }
      if (!verdict->conclusive) {
        std::fprintf(stderr, "discover-pci: no GPU found, but not every device could be read\n");
        std::exit(1);
      }
      std::map<std::string, std::string> labels = agent::DiscoveryLabels(*verdict);
      if (!flags->os_release.empty()) labels.merge(agent::OsReleaseLabels(flags->os_release));
      for (const auto& [key, value] : labels) std::printf("%s=%s\n", key.c_str(), value.c_str());
      return;
    }
    if (flags->node_name.empty()) {
      std::fprintf(stderr, "discover-pci: --node-name (or $NODE_NAME) is required\n");
      std::exit(2);
    }
    std::stop_source stop;
    const std::unique_ptr<kube::Client> client =
        ClientUntilSignal(flags->kubeconfig, "agent-discovery", "discover-pci", stop);
    absl::StatusOr<agent::PciNodeVerdict> verdict =
        agent::DiscoverAndLabel(*client,
                                {.sysfs_root = flags->sysfs_root,
                                 .os_release = flags->os_release,
                                 .node_name = flags->node_name},
                                stop.get_token());
    if (!verdict.ok()) std::exit(0);  // stopped before it could label: the next pod will
    std::map<std::string, std::string> labelled = agent::DiscoveryLabels(*verdict);
    if (!flags->os_release.empty()) labelled.merge(agent::OsReleaseLabels(flags->os_release));
    for (const auto& [key, value] : labelled) {
      std::printf("labelled node %s %s=%s\n", flags->node_name.c_str(), key.c_str(), value.c_str());
    }
    std::fflush(stdout);
    if (flags->once) std::exit(0);
    while (common::Clock::Real().SleepFor(absl::Hours(1), stop.get_token())) {
    }  // until SIGTERM
    std::exit(0);
  });
}

}  // namespace gpuop::cmd
