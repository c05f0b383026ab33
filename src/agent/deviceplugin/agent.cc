#include "agent/deviceplugin/agent.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace gpuop::agent {

DevicePluginAgent::DevicePluginAgent(std::vector<hw::Accelerator*> accelerators,
                                     ConfigSource& config, DevicePluginAgentOptions options)
    : accelerators_(std::move(accelerators)),
      source_(config),
      options_(std::move(options)),
      health_(options_.health, *options_.clock),
      manager_(options_.manager) {}

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
  // One plan at a time, so an older plan never lands after a newer one.
  absl::MutexLock replanning(&replan_mu_);
  std::vector<hw::Inventory> inventories;
  std::vector<hw::Gpu> gpus;
  for (hw::Accelerator* accelerator : accelerators_) {
    GPUOP_ASSIGN_OR_RETURN(hw::Inventory inventory, accelerator->Discover());
    gpus.insert(gpus.end(), inventory.gpus.begin(), inventory.gpus.end());
    inventories.push_back(std::move(inventory));
  }
  absl::StatusOr<DevicePluginConfig> loaded = source_.Load();
  absl::StatusOr<ResourcePlan> plan =
      loaded.ok() ? PlanResources(gpus, *loaded) : absl::StatusOr<ResourcePlan>(loaded.status());
  DevicePluginConfig config;
  {
    absl::MutexLock lock(&mu_);
    inventories_ = std::move(inventories);
    if (!plan.ok()) {
      // Keep serving what was good; say why the new configuration is not in force.
      last_error_ = plan.status();
      if (!config_.has_value()) return plan.status();
      absl::StatusOr<ResourcePlan> kept = PlanResources(gpus, *config_);
      if (!kept.ok()) return kept.status();
      plan = std::move(kept);
    } else {
      config_ = *loaded;
      last_error_ = absl::OkStatus();
    }
    plan_ = *plan;
    config = *config_;
  }
  return manager_.Apply(*plan, config, Topology(gpus), &health_);
}

absl::Status DevicePluginAgent::Start() {
  GPUOP_RETURN_IF_ERROR(manager_.Start());
  if (!source_.dir().empty()) GPUOP_RETURN_IF_ERROR(watch_.Add(source_.dir()));
  if (!options_.layout_file.empty()) {
    GPUOP_RETURN_IF_ERROR(
        watch_.Add(options_.layout_file.parent_path(), options_.layout_file.filename().string()));
  }
  GPUOP_RETURN_IF_ERROR(Replan());
  for (hw::Accelerator* accelerator : accelerators_) {
    threads_.emplace_back(
        [this, accelerator](std::stop_token stop) { WatchEvents(stop, accelerator); });
  }
  threads_.emplace_back([this](std::stop_token stop) { WatchConfigAndSamples(stop); });
  return absl::OkStatus();
}

void DevicePluginAgent::Stop() {
  for (auto& t : threads_) t.request_stop();
  threads_.clear();  // Joins.
  manager_.Stop();
}

void DevicePluginAgent::WatchEvents(std::stop_token stop, hw::Accelerator* accelerator) {
  while (!stop.stop_requested()) {
    absl::StatusOr<std::vector<hw::HardwareEvent>> events =
        accelerator->WaitEvents(options_.event_wait);
    if (!events.ok()) {
      // No event source (AMD) or a broken one: samples still catch lost GPUs.
      if (events.status().code() == absl::StatusCode::kUnimplemented) return;
      options_.clock->SleepFor(options_.event_wait, stop);
      continue;
    }
    if (!events->empty() && health_.Observe(*events)) manager_.RefreshHealth(health_);
  }
}

void DevicePluginAgent::Sample() {
  std::vector<hw::Inventory> inventories;
  {
    absl::MutexLock lock(&mu_);
    inventories = inventories_;
  }
  bool changed = false;
  for (size_t i = 0; i < accelerators_.size() && i < inventories.size(); ++i) {
    absl::StatusOr<hw::Sample> sample = accelerators_[i]->TakeSample();
    if (sample.ok()) changed = health_.Observe(inventories[i], *sample) || changed;
  }
  if (changed) manager_.RefreshHealth(health_);
}

void DevicePluginAgent::WatchConfigAndSamples(std::stop_token stop) {
  absl::Time next_sample = options_.clock->Now() + options_.sample_interval;
  absl::Time next_resync = options_.clock->Now() + options_.resync_interval;
  // The earliest recovery seen so far. Kept across iterations: once a condition has expired,
  // NextRecovery() no longer mentions it, but its devices still need the refresh.
  absl::Time recovery = absl::InfiniteFuture();
  while (!stop.stop_requested()) {
    const absl::Time now = options_.clock->Now();
    recovery = std::min(recovery, health_.NextRecovery());
    const absl::Time next = std::min(next_sample, recovery);
    // Wake for a configuration or layout change, the next sample or recovery, or (at least) to
    // notice a stop request.
    const int wait_ms = static_cast<int>(std::clamp<int64_t>(
        absl::ToInt64Milliseconds(next - now), 0, absl::ToInt64Milliseconds(options_.event_wait)));
    const bool changed = watch_.Wait(wait_ms);
    if (changed || options_.clock->Now() >= next_resync) {
      next_resync = options_.clock->Now() + options_.resync_interval;
      if (absl::Status s = Replan(); !s.ok()) {
        absl::MutexLock lock(&mu_);
        last_error_ = s;
      }
    }
    if (options_.clock->Now() >= next_sample) {
      Sample();
      next_sample = options_.clock->Now() + options_.sample_interval;
    }
    // A condition expired: its devices are healthy again.
    if (options_.clock->Now() >= recovery) {
      manager_.RefreshHealth(health_);
      recovery = absl::InfiniteFuture();
    }
  }
}

}  // namespace gpuop::agent
