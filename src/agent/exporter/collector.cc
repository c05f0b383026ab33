#include "agent/exporter/collector.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "agent/exporter/exposition.h"
#include "agent/exporter/process_stats.h"
#include "common/version.h"

namespace gpuop::agent::exporter {
namespace {

constexpr char kDiscover[] = "discover";
constexpr char kSample[] = "sample";
constexpr char kEvents[] = "events";
constexpr int kHealthyIntervals = 3;

std::vector<double> DurationBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

}  // namespace

Collector::Collector(CollectorOptions options)
    : options_(std::move(options)),
      clock_(*options_.clock),
      accelerators_(options_.accelerators.size()),
      duration_(DurationBuckets()),
      exposition_(std::make_shared<const std::string>()),
      events_(options_.accelerators.size()),
      errors_{{kDiscover, 0}, {kEvents, 0}, {kSample, 0}} {}

Collector::~Collector() { Stop(); }

void Collector::Start() {
  absl::MutexLock lock(&lifecycle_mu_);
  if (!threads_.empty()) return;
  threads_.emplace_back([this](std::stop_token stop) { Loop(stop); });
  for (size_t i = 0; i < options_.accelerators.size(); ++i) {
    threads_.emplace_back([this, i](std::stop_token stop) { WatchEvents(stop, i); });
  }
}

void Collector::Stop() {
  absl::MutexLock lock(&lifecycle_mu_);
  for (std::jthread& thread : threads_) thread.request_stop();
  threads_.clear();  // joins
}

void Collector::Loop(std::stop_token stop) {
  absl::Time next = clock_.Now();
  while (!stop.stop_requested()) {
    CollectOnce();
    next += options_.interval;
    // A cycle that overran its slot (a slow kubelet, a stalled driver) skips the slots it
    // missed instead of running them back to back.
    const absl::Time now = clock_.Now();
    if (next <= now) next = now + options_.interval;
    if (!clock_.SleepUntil(next, stop)) return;
  }
}

void Collector::WatchEvents(std::stop_token stop, size_t i) {
  hw::Accelerator* accelerator = options_.accelerators[i];
  while (!stop.stop_requested()) {
    absl::StatusOr<std::vector<hw::HardwareEvent>> events =
        accelerator->WaitEvents(options_.event_wait);
    if (!events.ok()) {
      const bool unsupported = events.status().code() == absl::StatusCode::kUnimplemented;
      {
        absl::MutexLock lock(&mu_);
        if (unsupported) {
          events_[i].supported = false;
        } else {
          ++errors_[kEvents];
        }
      }
      if (unsupported || !clock_.SleepFor(options_.event_wait, stop)) return;
      continue;
    }
    if (events->empty()) continue;
    absl::MutexLock lock(&mu_);
    for (const hw::HardwareEvent& event : *events) {
      // An XID of no known GPU has no series to go on.
      if (event.kind == hw::HardwareEvent::Kind::kXid && event.gpu_index >= 0) {
        events_[i].last_xid[event.gpu_index] = event.xid;
      }
    }
  }
}

void Collector::CountError(const char* source, const absl::Status& status, absl::Status& first) {
  if (first.ok()) first = status;
  absl::MutexLock lock(&mu_);
  ++errors_[source];
}

void Collector::SampleAndDiscover(size_t i, absl::Time now, absl::Status& first) {
  hw::Accelerator* accelerator = options_.accelerators[i];
  AcceleratorState& state = accelerators_[i];
  absl::StatusOr<hw::Sample> sample = accelerator->TakeSample();
  if (sample.ok()) {
    state.sample = *std::move(sample);
  } else {
    state.sample.reset();
    CountError(kSample, sample.status(), first);
  }
  const bool shape_changed = state.inventory.has_value() && state.sample.has_value() &&
                             state.sample->gpus.size() != state.inventory->gpus.size();
  if (!state.inventory.has_value() || shape_changed || state.rediscover ||
      now - state.discovered_at >= options_.rediscover_interval) {
    absl::StatusOr<hw::Inventory> inventory = accelerator->Discover();
    if (inventory.ok()) {
      state.inventory = *std::move(inventory);
      state.discovered_at = now;
      state.rediscover = false;
    } else {
      CountError(kDiscover, inventory.status(), first);
    }
  }
}

void Collector::UpdatePods(absl::Time now) {
  if (options_.pods == nullptr) return;
  absl::StatusOr<std::vector<podresources::PodDevice>> devices =
      options_.pods->List(options_.pod_resources_timeout);
  if (!devices.ok()) {
    absl::MutexLock lock(&mu_);
    ++pod_resources_errors_;
    return;
  }
  std::vector<const hw::Inventory*> inventories;
  for (const AcceleratorState& state : accelerators_) {
    if (state.inventory.has_value()) inventories.push_back(&*state.inventory);
  }
  attribution_ = podresources::Attribute(inventories, *devices, options_.attribution);
  pods_listed_ = true;
  if (attribution_.unknown_devices > 0 &&
      now - unknown_rediscovered_at_ >= options_.unknown_device_rediscover_gap) {
    unknown_rediscovered_at_ = now;
    for (AcceleratorState& state : accelerators_) state.rediscover = true;
  }
  // Per-container energy lives as long as the container holds devices.
  std::set<podresources::Holder> current;
  for (const auto& [uuid, holders] : attribution_.by_gpu) {
    current.insert(holders.gpu.begin(), holders.gpu.end());
    for (const auto& [instance, instance_holders] : holders.instances) {
      current.insert(instance_holders.begin(), instance_holders.end());
    }
  }
  std::erase_if(pod_energy_, [&](const auto& entry) { return !current.contains(entry.first); });
}

void Collector::AccountEnergy() {
  // GPUs that left the inventory (a hot unplug) take their totals with them; a failed sample
  // keeps them.
  std::set<std::string> present;
  for (const AcceleratorState& state : accelerators_) {
    if (!state.inventory.has_value()) continue;
    for (const hw::Gpu& gpu : state.inventory->gpus) present.insert(gpu.uuid);
  }
  std::erase_if(gpu_energy_, [&](const auto& entry) { return !present.contains(entry.first); });
  for (const AcceleratorState& state : accelerators_) {
    if (!state.inventory.has_value() || !state.sample.has_value()) continue;
    for (const hw::GpuSample& sample : state.sample->gpus) {
      auto gpu = std::find_if(state.inventory->gpus.begin(), state.inventory->gpus.end(),
                              [&](const hw::Gpu& g) { return g.index == sample.index; });
      if (gpu == state.inventory->gpus.end() || sample.lost) continue;
      EnergyState& energy = gpu_energy_[gpu->uuid];
      double delta = 0;
      if (sample.energy_joules.has_value()) {
        if (energy.counter.has_value()) {
          delta = std::max(0.0, *sample.energy_joules - *energy.counter);
        }
        energy.counter = sample.energy_joules;
      } else if (sample.power_watts.has_value() && energy.time != absl::InfinitePast() &&
                 state.sample->time - energy.time <= kHealthyIntervals * options_.interval) {
        // Without a counter, power x time; not across a gap where the power is unknown.
        delta = *sample.power_watts * absl::ToDoubleSeconds(state.sample->time - energy.time);
        delta = std::max(0.0, delta);
      }
      energy.time = state.sample->time;
      energy.total += delta;
      if (delta == 0) continue;
      auto holders = attribution_.by_gpu.find(gpu->uuid);
      if (holders == attribution_.by_gpu.end()) continue;
      for (const auto& [holder, share] : podresources::EnergyShares(*gpu, holders->second)) {
        pod_energy_[holder] += delta * share;
      }
    }
  }
}

std::string Collector::Render(absl::Time now) {
  ExpositionInput input{.node_name = options_.node_name,
                        .series_per_holder = options_.series_per_holder,
                        .pod_energy = options_.pods != nullptr ? &pod_energy_ : nullptr};
  {
    absl::MutexLock lock(&mu_);
    input.self = ExpositionInput::Self{
        .version = std::string(common::Version()),
        .collections = collections_,
        .collection_errors = {errors_.begin(), errors_.end()},
        .pod_resources_errors = pod_resources_errors_,
        .last_collection_timestamp = absl::ToDoubleSeconds(now - absl::UnixEpoch())};
    for (size_t i = 0; i < accelerators_.size(); ++i) {
      const AcceleratorState& state = accelerators_[i];
      if (!state.inventory.has_value()) continue;
      for (const hw::Gpu& gpu : state.inventory->gpus) {
        ExpositionInput::Gpu view{.gpu = &gpu, .driver_version = &state.inventory->driver_version};
        if (state.sample.has_value()) {
          for (const hw::GpuSample& sample : state.sample->gpus) {
            if (sample.index == gpu.index) view.sample = &sample;
          }
        }
        if (events_[i].supported) {
          auto xid = events_[i].last_xid.find(gpu.index);
          view.last_xid = xid == events_[i].last_xid.end() ? 0 : xid->second;
        }
        if (auto holders = attribution_.by_gpu.find(gpu.uuid);
            holders != attribution_.by_gpu.end()) {
          view.holders = &holders->second;
        }
        if (auto energy = gpu_energy_.find(gpu.uuid); energy != gpu_energy_.end()) {
          view.energy_joules = energy->second.total;
        }
        input.gpus.push_back(view);
      }
    }
  }
  input.self.collection_duration = duration_.Read();
  if (std::optional<ProcessStats> process = ReadProcessStats()) {
    input.self.resident_memory_bytes = process->resident_memory_bytes;
    input.self.cpu_seconds = process->cpu_seconds;
  }
  std::string text;
  text.reserve(last_size_ + last_size_ / 8);
  RenderExposition(input, text);
  last_size_ = text.size();
  return text;
}

void Collector::CollectOnce() {
  absl::MutexLock cycle(&cycle_mu_);
  const absl::Time start = clock_.Now();
  absl::Status first;
  for (size_t i = 0; i < accelerators_.size(); ++i) SampleAndDiscover(i, start, first);
  UpdatePods(start);
  AccountEnergy();
  const absl::Time end = clock_.Now();
  duration_.Observe(absl::ToDoubleSeconds(end - start));
  {
    absl::MutexLock lock(&mu_);
    ++collections_;
    if (first.ok()) last_success_ = end;
    last_error_ = first;
  }
  auto text = std::make_shared<const std::string>(Render(end));
  absl::MutexLock lock(&mu_);
  exposition_ = std::move(text);
  ++published_;
}

std::shared_ptr<const std::string> Collector::Exposition() const {
  absl::MutexLock lock(&mu_);
  return exposition_;
}

absl::Status Collector::Health() const {
  absl::MutexLock lock(&mu_);
  const std::string error =
      last_error_.ok() ? "" : absl::StrCat("; latest error: ", last_error_.message());
  if (last_success_ == absl::InfinitePast()) {
    return absl::UnavailableError(absl::StrCat("no successful collection yet", error));
  }
  const absl::Duration since = clock_.Now() - last_success_;
  if (since > kHealthyIntervals * options_.interval) {
    return absl::UnavailableError(absl::StrCat(
        "last successful collection ", absl::FormatDuration(since), " ago, more than ",
        kHealthyIntervals, " intervals of ", absl::FormatDuration(options_.interval), error));
  }
  return absl::OkStatus();
}

int64_t Collector::collections() const {
  absl::MutexLock lock(&mu_);
  return published_;
}

absl::Status Collector::last_error() const {
  absl::MutexLock lock(&mu_);
  return last_error_;
}

}  // namespace gpuop::agent::exporter
