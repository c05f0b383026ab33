#include "agent/health/watcher.h"

#include <algorithm>
#include <cstdio>

#include "agent/health/report.h"
#include "common/files.h"
#include "common/status_macros.h"

namespace gpuop::agent {

HealthWatcher::HealthWatcher(std::vector<hw::Accelerator*> accelerators,
                             HealthWatcherOptions options, std::function<void()> on_change)
    : accelerators_(std::move(accelerators)),
      options_(std::move(options)),
      on_change_(std::move(on_change)),
      tracker_(options_.policy, *options_.clock) {}

HealthWatcher::~HealthWatcher() { Stop(); }

void HealthWatcher::SetInventories(std::vector<hw::Inventory> inventories) {
  absl::MutexLock lock(&mu_);
  inventories_ = std::move(inventories);
}

absl::Status HealthWatcher::Start() {
  if (!options_.external_file.empty()) {
    GPUOP_RETURN_IF_ERROR(file_watch_.Add(options_.external_file.parent_path(),
                                          options_.external_file.filename().string()));
    ReadExternal();
  }
  if (options_.evidence != nullptr) tracker_.ObserveRecovery(*options_.evidence);
  for (hw::Accelerator* accelerator : accelerators_) {
    // Subscribes before returning, so that no event after Start() is missed.
    absl::StatusOr<std::vector<hw::HardwareEvent>> first =
        accelerator->WaitEvents(absl::ZeroDuration());
    if (first.ok() && !first->empty()) tracker_.Observe(*first);
  }
  for (hw::Accelerator* accelerator : accelerators_) {
    threads_.emplace_back(
        [this, accelerator](std::stop_token stop) { WatchEvents(stop, accelerator); });
  }
  threads_.emplace_back([this](std::stop_token stop) { WatchSamples(stop); });
  return absl::OkStatus();
}

void HealthWatcher::Stop() {
  for (auto& t : threads_) t.request_stop();
  threads_.clear();  // Joins.
}

void HealthWatcher::WatchEvents(std::stop_token stop, hw::Accelerator* accelerator) {
  while (!stop.stop_requested()) {
    absl::StatusOr<std::vector<hw::HardwareEvent>> events =
        accelerator->WaitEvents(options_.event_wait);
    if (!events.ok()) {
      // No event source (AMD) or a broken one: samples still catch lost GPUs.
      if (events.status().code() == absl::StatusCode::kUnimplemented) return;
      options_.clock->SleepFor(options_.event_wait, stop);
      continue;
    }
    if (!events->empty() && tracker_.Observe(*events)) on_change_();
  }
}

bool HealthWatcher::SampleNow() {
  std::vector<hw::Inventory> inventories;
  {
    absl::MutexLock lock(&mu_);
    inventories = inventories_;
  }
  bool changed = tracker_.ObserveUnavailable(inventories);
  if (options_.evidence != nullptr)
    changed = tracker_.ObserveRecovery(*options_.evidence) || changed;
  for (size_t i = 0; i < accelerators_.size() && i < inventories.size(); ++i) {
    absl::StatusOr<hw::Sample> sample = accelerators_[i]->TakeSample();
    if (sample.ok()) changed = tracker_.Observe(inventories[i], *sample) || changed;
  }
  return changed;
}

bool HealthWatcher::ReadExternal() {
  absl::StatusOr<std::optional<std::string>> text =
      common::ReadFileIfExists(options_.external_file);
  std::map<std::string, Unhealthy> verdicts;
  if (text.ok() && text->has_value()) {
    absl::StatusOr<std::map<std::string, Unhealthy>> parsed =
        ParseHealthFile(**text, options_.clock->Now());
    if (parsed.ok()) {
      verdicts = *std::move(parsed);
    } else {
      // A torn or foreign file is ignored rather than trusted; the owner rewrites it whole.
      std::fprintf(stderr, "health: ignoring %s: %s\n", options_.external_file.c_str(),
                   parsed.status().ToString().c_str());
    }
  }
  return tracker_.SetExternal(std::move(verdicts));
}

void HealthWatcher::WatchSamples(std::stop_token stop) {
  const common::Clock& clock = *options_.clock;
  absl::Time next_sample = clock.Now() + options_.sample_interval;
  while (!stop.stop_requested()) {
    const absl::Time next = next_sample;
    const int wait_ms =
        static_cast<int>(std::clamp<int64_t>(absl::ToInt64Milliseconds(next - clock.Now()), 0,
                                             absl::ToInt64Milliseconds(options_.event_wait)));
    bool changed = false;
    if (!options_.external_file.empty()) {
      // The file's verdicts also expire, so it is re-read at every sample.
      const bool touched = file_watch_.Wait(wait_ms);
      if (touched || clock.Now() >= next_sample) changed = ReadExternal();
    } else {
      clock.SleepFor(absl::Milliseconds(wait_ms), stop);
    }
    if (clock.Now() >= next_sample) {
      changed = SampleNow() || changed;
      next_sample = clock.Now() + options_.sample_interval;
    }
    if (changed) on_change_();
  }
}

}  // namespace gpuop::agent
