#include "agent/deviceplugin/agent.h"

#include "absl/strings/str_cat.h"
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

absl::Status DevicePluginAgent::Replan(bool& discovery_failed) {
  // One plan at a time, so an older plan never lands after a newer one.
  absl::MutexLock replanning(&replan_mu_);
  std::vector<hw::Inventory> inventories;
  std::vector<hw::Gpu> gpus;
  for (hw::Accelerator* accelerator : accelerators_) {
    absl::StatusOr<hw::Inventory> inventory = accelerator->Discover();
    if (!inventory.ok()) {
      discovery_failed = true;
      return inventory.status();
    }
    gpus.insert(gpus.end(), inventory->gpus.begin(), inventory->gpus.end());
    inventories.push_back(*std::move(inventory));
  }
  absl::StatusOr<DevicePluginConfig> loaded = source_.Load();
  absl::StatusOr<ResourcePlan> plan =
      loaded.ok() ? PlanResources(gpus, *loaded) : absl::StatusOr<ResourcePlan>(loaded.status());
  health_.SetInventories(std::move(inventories));
  DevicePluginConfig config;
  absl::Status rejected;
  {
    absl::MutexLock lock(&mu_);
    if (!plan.ok()) {
      // Keep serving what was good; say why the new configuration is not in force. With nothing
      // good yet, serve nothing and wait for a configuration that loads.
      rejected = plan.status();
      last_error_ = rejected;
      if (!config_.has_value()) return rejected;
      absl::StatusOr<ResourcePlan> kept = PlanResources(gpus, *config_);
      if (!kept.ok()) return kept.status();
      plan = std::move(kept);
    } else {
      config_ = *loaded;
      last_error_ = absl::OkStatus();
    }
    if (rejected.ok() && !plan->mig_invalid.empty()) {
      last_error_ = absl::FailedPreconditionError(
          absl::StrCat("MIG strategy single: ", plan->mig_invalid,
                       "; nvidia.com/gpu has no devices until the layout is fixed"));
    }
    plan_ = *plan;
    config = *config_;
  }
  GPUOP_RETURN_IF_ERROR(manager_.Apply(*plan, config, Topology(gpus), &health_.tracker()));
  return rejected;
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
    return planned;
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
  const int wait_ms = static_cast<int>(absl::ToInt64Milliseconds(options_.poll));
  while (!stop.stop_requested()) {
    // Wake for a configuration or layout change, or (at least) to notice a stop request.
    const bool changed = watch_.Wait(wait_ms);
    if (!changed && options_.clock->Now() < next_resync) continue;
    next_resync = options_.clock->Now() + options_.resync_interval;
    if (absl::Status s = Replan(); !s.ok()) {
      absl::MutexLock lock(&mu_);
      last_error_ = s;
    }
  }
}

}  // namespace gpuop::agent
