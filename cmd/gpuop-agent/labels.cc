// gpuop-agent labels: keeps the node's GPU labels current until SIGTERM (or once with --once).
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "agent/deviceplugin/config_source.h"
#include "agent/labels/inventory.h"
#include "agent/labels/node_labeler.h"
#include "agent/node/node_label_watch.h"
#include "cmd/gpuop-agent/accelerators.h"
#include "cmd/gpuop-agent/commands.h"
#include "common/file_watch.h"
#include "common/signals.h"
#include "hw/amd/amd_accelerator.h"
#include "kube/config/rest_config.h"

namespace gpuop::cmd {
namespace {

struct LabelFlags {
  HardwareFlags hardware;
  std::string node_name;
  std::string kubeconfig;
  std::string config_dir;
  std::string config_name = "default";
  std::string layout_file;
  // GFD's flags; unset ones come from the configuration's flags.gfd.
  int resync_seconds = 0;  // 0: not given
  std::string sleep_interval;
  bool no_timestamp = false;
  std::string machine_type_file;
  std::string host_proc = "/proc";
  bool once = false;
  bool dry_run = false;
};

struct NodeMetadata {
  agent::NodeLabels labels;
  agent::NodeLabels annotations;
  absl::Duration interval = absl::Seconds(60);  // until the next full re-labelling
};

// The command line's GFD settings (what it leaves unset comes from the configuration).
absl::StatusOr<agent::GfdOverrides> Overrides(const LabelFlags& flags) {
  agent::GfdOverrides out;
  if (flags.no_timestamp) out.no_timestamp = true;
  if (!flags.machine_type_file.empty()) out.machine_type_file = flags.machine_type_file;
  if (flags.resync_seconds != 0) out.sleep_interval = absl::Seconds(flags.resync_seconds);
  if (!flags.sleep_interval.empty()) {
    absl::Duration interval;
    if (!absl::ParseDuration(flags.sleep_interval, &interval)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--sleep-interval: \"", flags.sleep_interval, "\" is not a duration"));
    }
    out.sleep_interval = interval;
  }
  return out;
}

// A host path (flags.gfd.machineTypeFile) as this process sees it: /sys under --sysfs-root,
// anything else under --host-root.
std::string HostPath(const HardwareFlags& hardware, const std::string& path) {
  if (path.empty()) return path;
  if (absl::StartsWith(path, "/sys/")) return hardware.sysfs_root + path.substr(4);
  if (hardware.host_root.empty() || hardware.host_root == "/") return path;
  return hardware.host_root + path;
}

// Computes the labels (and the inventory annotation) from what the node has now.
absl::StatusOr<NodeMetadata> Compute(const LabelFlags& flags, const agent::ConfigSource& source) {
  agent::LabelInputs inputs;
  std::vector<hw::Gpu> gpus;
  std::vector<hw::Inventory> inventories;
  for (auto& accelerator : OpenAccelerators(flags.hardware)) {
    if (accelerator->vendor() == hw::Vendor::kAmd) {
      auto* amd = static_cast<hw::AmdAccelerator*>(accelerator.get());
      absl::StatusOr<hw::AmdDiscovery> discovery = amd->DiscoverAmd();
      if (!discovery.ok()) return discovery.status();
      gpus.insert(gpus.end(), discovery->inventory.gpus.begin(), discovery->inventory.gpus.end());
      inventories.push_back(discovery->inventory);
      inputs.amd = *std::move(discovery);
    } else {
      absl::StatusOr<hw::Inventory> inventory = accelerator->Discover();
      if (!inventory.ok()) return inventory.status();
      gpus.insert(gpus.end(), inventory->gpus.begin(), inventory->gpus.end());
      inventories.push_back(*inventory);
      inputs.nvidia = *std::move(inventory);
    }
  }
  absl::StatusOr<agent::DevicePluginConfig> config = source.Load();
  if (!config.ok()) return config.status();
  inputs.plugin_config = *config;
  absl::StatusOr<agent::GfdOverrides> overrides = Overrides(flags);
  if (!overrides.ok()) return overrides.status();
  absl::StatusOr<agent::GfdSettings> gfd = agent::ResolveGfdSettings(config->gfd, *overrides);
  if (!gfd.ok()) return gfd.status();
  inputs.machine = agent::MachineType(HostPath(flags.hardware, gfd->machine_type_file));
  if (gfd->timestamp) inputs.timestamp = absl::Now();
  NodeMetadata out{.labels = agent::ComputeNodeLabels(inputs), .interval = gfd->interval};
  if (!gpus.empty()) {
    out.annotations[agent::kInventoryAnnotation] = agent::InventoryAnnotation(inventories);
  }
  if (inputs.nvidia.has_value() &&
      agent::HostDriverPresent(flags.host_proc, flags.hardware.DriverContainerRoot())) {
    out.labels[agent::kDriverPreinstalledLabel] = "true";
  }
  return out;
}

}  // namespace

void AddLabelsCommand(CLI::App& app) {
  auto flags = std::make_shared<LabelFlags>();
  CLI::App* sub = app.add_subcommand(
      "labels", "Keep the node's GPU labels (GPU feature discovery keys) current");
  AddHardwareFlags(*sub, flags->hardware);
  AddNodeNameFlag(*sub, flags->node_name, "the Node to label");
  sub->add_option("--kubeconfig", flags->kubeconfig, "Kubeconfig; in-cluster when unset");
  sub->add_option("--config-dir", flags->config_dir, "Device plugin configurations (sharing)");
  sub->add_option("--config-name", flags->config_name, "Configuration to use")
      ->capture_default_str();
  sub->add_option("--layout-file", flags->layout_file,
                  "File the MIG manager rewrites after a layout change (re-labels at once)");
  sub->add_option("--sleep-interval", flags->sleep_interval,
                  "Time between full re-labellings (\"60s\"); default flags.gfd.sleepInterval, "
                  "else 60s");
  sub->add_option("--resync", flags->resync_seconds,
                  "Seconds between full re-labellings (older spelling of --sleep-interval)");
  sub->add_flag("--no-timestamp", flags->no_timestamp,
                "Leave out nvidia.com/gfd.timestamp (also flags.gfd.noTimestamp)");
  sub->add_option("--machine-type-file", flags->machine_type_file,
                  "Host file with the machine type for nvidia.com/gpu.machine; default "
                  "flags.gfd.machineTypeFile, else /sys/class/dmi/id/product_name");
  sub->add_option("--host-proc", flags->host_proc,
                  "The host's /proc (a loaded NVIDIA driver shows in driver/nvidia/version)")
      ->capture_default_str();
  sub->add_flag("--once", flags->once, "Apply once and exit");
  sub->add_flag("--dry-run", flags->dry_run, "Print the labels instead of applying them");
  sub->callback([flags] {
    common::BlockTerminationSignals();
    agent::ConfigSource source(flags->config_dir, flags->config_name);
    if (flags->dry_run) {
      absl::StatusOr<NodeMetadata> computed = Compute(*flags, source);
      if (!computed.ok()) {
        std::fprintf(stderr, "labels: %s\n", computed.status().ToString().c_str());
        std::exit(1);
      }
      for (const auto& [k, v] : computed->labels) std::printf("%s=%s\n", k.c_str(), v.c_str());
      for (const auto& [k, v] : computed->annotations) {
        std::printf("annotation %s=%s\n", k.c_str(), v.c_str());
      }
      return;
    }
    if (flags->node_name.empty()) {
      std::fprintf(stderr, "labels: --node-name (or $NODE_NAME) is required\n");
      std::exit(2);
    }
    absl::StatusOr<std::unique_ptr<kube::Client>> client =
        MakeClient(flags->kubeconfig, "agent-labels");
    if (!client.ok()) {
      std::fprintf(stderr, "labels: %s\n", client.status().ToString().c_str());
      std::exit(1);
    }
    agent::NodeLabeler labeler(**client, flags->node_name);
    common::FileWatch watch;
    if (!flags->config_dir.empty()) (void)watch.Add(flags->config_dir);
    if (!flags->layout_file.empty()) {
      const std::filesystem::path layout(flags->layout_file);
      (void)watch.Add(layout.parent_path(), layout.filename().string());
    }
    // The sharing configuration named by the node's label shapes the labels too.
    std::atomic<bool> relabel{false};
    agent::NodeLabelWatch label_watch(**client, flags->node_name, agent::ConfigSource::kNodeLabel,
                                      [&source, &relabel](const std::string& value) {
                                        source.SetSelected(value);
                                        relabel = true;
                                      });
    label_watch.Start();
    label_watch.WaitForSync(absl::Seconds(10));
    std::atomic<bool> stopping{false};
    std::jthread signals([&stopping] {
      common::WaitForTerminationSignal();
      stopping = true;
    });
    while (!stopping) {
      absl::StatusOr<NodeMetadata> computed = Compute(*flags, source);
      absl::Status applied = computed.ok() ? labeler.Apply(computed->labels, computed->annotations)
                                           : computed.status();
      if (!applied.ok()) std::fprintf(stderr, "labels: %s\n", applied.ToString().c_str());
      if (flags->once) std::exit(applied.ok() ? 0 : 1);
      // A configuration or layout change wakes at once; the sleep interval catches changes
      // nothing announces (and renews gfd.timestamp).
      const absl::Duration interval = computed.ok() ? computed->interval : absl::Seconds(60);
      const int64_t ticks = absl::ToInt64Milliseconds(interval) / 100;
      for (int64_t waited = 0; waited < ticks && !stopping; ++waited) {
        if (watch.Wait(100) || relabel.exchange(false)) break;
      }
    }
    std::exit(0);
  });
}

}  // namespace gpuop::cmd
