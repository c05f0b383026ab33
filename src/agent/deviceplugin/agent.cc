#include "agent/deviceplugin/agent.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/mps/root.h"
#include "common/files.h"
#include "common/status_macros.h"

namespace gpuop::agent {

DevicePluginAgent::DevicePluginAgent(std::vector<hw::Accelerator*> accelerators,
                                     ConfigSource& config, DevicePluginAgentOptions options)
    : accelerators_(std::move(accelerators)),
      source_(config),
      options_(std::move(options)),
      manager_(options_.manager),
      health_(accelerators_, options_.health,
              [this] { manager_.RefreshHealth(health_.tracker()); }) {}

DevicePluginAgent::~DevicePluginAgent() { Stop(); }

absl::Status DevicePluginAgent::last_error() const {
  absl::MutexLock lock(&mu_);
  return last_error_;
}

DevicePluginConfig DevicePluginAgent::config() const {
  absl::MutexLock lock(&mu_);
  return config_.value_or(DevicePluginConfig{});
}

ResourcePlan DevicePluginAgent::plan() const {
  absl::MutexLock lock(&mu_);
  return plan_;
}

absl::Status DevicePluginAgent::Replan() {
  bool discovery_failed = false;
  return Replan(discovery_failed);
}

void DevicePluginAgent::Warn(const std::string& message) {
  {
    absl::MutexLock lock(&mu_);
    if (!warned_.insert(message).second) return;
  }
  if (options_.warn) {
    options_.warn(message);
  } else {
    std::fprintf(stderr, "device-plugin: %s\n", message.c_str());
  }
}

absl::StatusOr<AllocateSettings> DevicePluginAgent::Settings(const DevicePluginConfig& config) {
  AllocateSettings settings{.strategies = config.device_list,
                            .id_strategy = config.device_id_strategy,
                            .cdi_annotation_prefix = config.cdi_annotation_prefix,
                            .pass_device_specs = config.pass_device_specs,
                            .dev_root = !config.nvidia_dev_root.empty() ? config.nvidia_dev_root
                                        : !config.nvidia_driver_root.empty()
                                            ? config.nvidia_driver_root
                                            : "/",
                            .gds = config.gds_enabled,
                            .mofed = config.mofed_enabled,
                            .gdrcopy = config.gdrcopy_enabled,
                            .fail_requests_greater_than_one = config.fail_requests_greater_than_one,
                            .cdi_enabled = options_.cdi_enabled,
                            .cdi_spec = options_.cdi_spec,
                            .host_root = options_.host_root,
                            .mps_root = config.mps_root};
  for (int channel : config.imex_channel_ids) {
    const std::filesystem::path node =
        options_.host_root / std::filesystem::path(settings.dev_root).relative_path() /
        absl::StrCat("dev/nvidia-caps-imex-channels/channel", channel);
    std::error_code ec;
    if (std::filesystem::exists(node, ec)) {
      settings.imex_channels.push_back(channel);
    } else if (config.imex_required) {
      return absl::FailedPreconditionError(absl::StrCat("imex.required: IMEX channel ", channel,
                                                        " (", node.string(), ") does not exist"));
    } else {
      Warn(absl::StrCat("IMEX channel ", channel, " does not exist on this node; not passed"));
    }
  }
  if (!options_.cdi_enabled && config.device_list.AnyCdi()) {
    Warn(
        "gpuop's CDI component is off on this node: the CDI device list strategies are served "
        "as envvar");
  }
  return settings;
}

absl::Status DevicePluginAgent::Replan(bool& discovery_failed) {
  // One plan at a time, so an older plan never lands after a newer one.
  absl::MutexLock replanning(&replan_mu_);
  absl::StatusOr<DevicePluginConfig> loaded = source_.Load();
  std::vector<hw::Inventory> inventories;
  std::vector<hw::Gpu> gpus;
  for (hw::Accelerator* accelerator : accelerators_) {
    absl::StatusOr<hw::Inventory> inventory = accelerator->Discover();
    if (!inventory.ok()) {
      discovery_failed = true;
      absl::MutexLock lock(&mu_);
      init_failed_ = true;
      // NVIDIA's failOnInitError, from the configuration that would be in force.
      init_fatal_ = loaded.ok() ? loaded->fail_on_init_error
                                : config_.value_or(DevicePluginConfig{}).fail_on_init_error;
      return inventory.status();
    }
    gpus.insert(gpus.end(), inventory->gpus.begin(), inventory->gpus.end());
    inventories.push_back(*std::move(inventory));
  }
  health_.SetInventories(std::move(inventories));
  // The plan and the Allocate settings of `config`, or why they cannot be had.
  auto plan_for = [&](const DevicePluginConfig& config)
      -> absl::StatusOr<std::pair<ResourcePlan, AllocateSettings>> {
    GPUOP_ASSIGN_OR_RETURN(ResourcePlan plan, PlanResources(gpus, config));
    GPUOP_ASSIGN_OR_RETURN(AllocateSettings settings, Settings(config));
    return std::pair{std::move(plan), std::move(settings)};
  };
  absl::StatusOr<std::pair<ResourcePlan, AllocateSettings>> planned =
      loaded.ok() ? plan_for(*loaded) : loaded.status();
  DevicePluginConfig config;
  absl::Status rejected;
  {
    absl::MutexLock lock(&mu_);
    init_failed_ = false;
    if (!planned.ok()) {
      // Keep serving what was good; say why the new configuration is not in force. With nothing
      // good yet, serve nothing and wait for a configuration that loads.
      rejected = planned.status();
      last_error_ = rejected;
      if (!config_.has_value()) return rejected;
      config = *config_;
    } else {
      config_ = *loaded;
      config = *loaded;
      last_error_ = absl::OkStatus();
    }
  }
  if (!planned.ok()) {
    planned = plan_for(config);
    if (!planned.ok()) return planned.status();
  }
  auto& [plan, settings] = *planned;
  for (const std::string& key : config.not_acted_on) Warn(absl::StrCat("not acted on: ", key));
  for (const std::string& warning : plan.warnings) Warn(warning);
  const std::string held = HoldUnreadyMps(config, plan);
  {
    absl::MutexLock lock(&mu_);
    if (rejected.ok() && !plan.mig_invalid.empty()) {
      last_error_ = absl::FailedPreconditionError(
          absl::StrCat("MIG strategy single: ", plan.mig_invalid,
                       "; nvidia.com/gpu has no devices until the layout is fixed"));
    } else if (rejected.ok() && !held.empty()) {
      last_error_ = absl::FailedPreconditionError(held);
    }
    plan_ = plan;
  }
  GPUOP_RETURN_IF_ERROR(manager_.Apply(plan, settings, Topology(gpus), &health_.tracker()));
  return rejected;
}

std::filesystem::path DevicePluginAgent::MpsRootSeen(const DevicePluginConfig& config) const {
  return options_.host_root / std::filesystem::path(config.mps_root).relative_path();
}

std::string DevicePluginAgent::HoldUnreadyMps(const DevicePluginConfig& config,
                                              ResourcePlan& plan) {
  const std::map<std::string, std::map<std::string, int>> shares = MpsShares(plan);
  if (shares.empty()) return "";
  const mps::Root root(MpsRootSeen(config));
  absl::StatusOr<std::optional<std::string>> text = common::ReadFileIfExists(root.ReadyFile());
  const mps::ReadyResources ready =
      text.ok() && text->has_value() ? mps::ParseReady(**text) : mps::ReadyResources{};
  std::vector<std::string> held;
  for (const auto& [resource, gpus] : shares) {
    auto it = ready.find(resource);
    if (it != ready.end() && it->second == gpus) continue;
    plan.resources.erase(resource);
    held.push_back(resource);
  }
  if (held.empty()) return "";
  return absl::StrCat("sharing.mps: ", absl::StrJoin(held, ", "),
                      " not served until the MPS control daemon reports it ready in ",
                      root.ReadyFile().string());
}

void DevicePluginAgent::WatchMpsRoot(bool& changed) {
  std::filesystem::path dir;
  {
    absl::MutexLock lock(&mu_);
    if (!config_.has_value() || !config_->mps) return;
    dir = MpsRootSeen(*config_);
  }
  if (mps_watched_.contains(dir)) return;
  // Watched once the daemon has made it (the plugin sees the host read-only and creates
  // nothing there); until then each wake looks for it.
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return;
  if (watch_.Add(dir, ".ready").ok()) {
    mps_watched_.insert(dir);
    changed = true;  // it may have been written before the watch
  }
}

absl::Status DevicePluginAgent::Start() {
  GPUOP_RETURN_IF_ERROR(manager_.Start());
  if (!source_.dir().empty()) GPUOP_RETURN_IF_ERROR(watch_.Add(source_.dir()));
  if (!options_.layout_file.empty()) {
    GPUOP_RETURN_IF_ERROR(
        watch_.Add(options_.layout_file.parent_path(), options_.layout_file.filename().string()));
  }
  bool discovery_failed = false;
  if (absl::Status planned = Replan(discovery_failed); !planned.ok() && discovery_failed) {
    // NVIDIA's failOnInitError: exit (the kubelet restarts the pod), unless the configuration
    // says to keep running without GPUs.
    {
      absl::MutexLock lock(&mu_);
      if (init_fatal_) return planned;
    }
    Warn(absl::StrCat("no GPUs yet (failOnInitError: false; trying again every ",
                      absl::FormatDuration(options_.init_retry), "): ", planned.message()));
    absl::MutexLock lock(&mu_);
    last_error_ = planned;
  }
  GPUOP_RETURN_IF_ERROR(health_.Start());
  config_thread_ = std::jthread([this](std::stop_token stop) { WatchConfig(stop); });
  return absl::OkStatus();
}

void DevicePluginAgent::Stop() {
  config_thread_ = std::jthread();  // Stops and joins.
  health_.Stop();
  manager_.Stop();
}

void DevicePluginAgent::WatchConfig(std::stop_token stop) {
  absl::Time next_resync = options_.clock->Now() + options_.resync_interval;
  absl::Time next_init_retry = options_.clock->Now() + options_.init_retry;
  const int wait_ms = static_cast<int>(absl::ToInt64Milliseconds(options_.poll));
  while (!stop.stop_requested()) {
    // Wake for a configuration or layout change, or (at least) to notice a stop request.
    bool changed = watch_.Wait(wait_ms);
    WatchMpsRoot(changed);
    bool retry = false;
    {
      absl::MutexLock lock(&mu_);
      retry = init_failed_ && options_.clock->Now() >= next_init_retry;
    }
    if (!changed && !retry && options_.clock->Now() < next_resync) continue;
    next_resync = options_.clock->Now() + options_.resync_interval;
    next_init_retry = options_.clock->Now() + options_.init_retry;
    if (absl::Status s = Replan(); !s.ok()) {
      absl::MutexLock lock(&mu_);
      last_error_ = s;
    }
  }
}

}  // namespace gpuop::agent
