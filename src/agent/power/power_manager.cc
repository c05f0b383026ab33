#include "agent/power/power_manager.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/podresources/attribution.h"

namespace gpuop::agent::power {
namespace {

// Limits closer than this are the same limit (NVML reports milliwatts; drivers round).
constexpr double kSameWatts = 0.5;

bool Same(double a, double b) { return std::fabs(a - b) < kSameWatts; }

}  // namespace

std::string ActionName(PowerDecision::Action action) {
  switch (action) {
    case PowerDecision::Action::kNone:
      return "none";
    case PowerDecision::Action::kLowered:
      return "lowered";
    case PowerDecision::Action::kRestored:
      return "restored";
    case PowerDecision::Action::kSkipped:
      return "skipped";
    case PowerDecision::Action::kFailed:
      return "failed";
  }
  return "unknown";
}

PowerManager::PowerManager(hw::Accelerator& accelerator, podresources::PodLister& pods,
                           PowerManagerOptions options)
    : accelerator_(accelerator),
      pods_(pods),
      options_(std::move(options)),
      clock_(*options_.clock),
      policy_(options_.policy) {}

PowerManager::~PowerManager() { Stop(); }

void PowerManager::SetPolicy(const PowerPolicy& policy) {
  absl::MutexLock lock(&mu_);
  policy_ = policy;
}

std::map<int, PowerManager::GpuState> PowerManager::state() const {
  absl::MutexLock lock(&mu_);
  return state_;
}

std::map<int, std::string> PowerManager::Holders(
    const std::vector<podresources::PodDevice>& devices) {
  podresources::Attribution attribution = podresources::Attribute({&*inventory_}, devices);
  if (attribution.unknown_devices > 0) {
    // A MIG device created since the last discovery: look again once.
    if (absl::StatusOr<hw::Inventory> fresh = accelerator_.Discover(); fresh.ok()) {
      inventory_ = *std::move(fresh);
      attribution = podresources::Attribute({&*inventory_}, devices);
    }
  }
  std::map<int, std::string> holders;
  for (const hw::Gpu& gpu : inventory_->gpus) {
    const auto held = attribution.by_gpu.find(gpu.uuid);
    if (held == attribution.by_gpu.end()) continue;
    const podresources::GpuHolders& h = held->second;
    const podresources::Holder* first =
        !h.gpu.empty() ? &h.gpu.front()
        : !h.instances.empty() && !h.instances.begin()->second.empty()
            ? &h.instances.begin()->second.front()
            : nullptr;
    if (first != nullptr) holders.emplace(gpu.index, first->pod_namespace + "/" + first->pod);
  }
  return holders;
}

PowerDecision PowerManager::SetLimit(const hw::GpuSample& gpu, GpuState& state, bool lower,
                                     double watts, std::string reason, absl::Time now) {
  PowerDecision d{
      .time = now,
      .gpu_index = gpu.index,
      .action = lower ? PowerDecision::Action::kLowered : PowerDecision::Action::kRestored,
      .from_watts = gpu.power_limit_watts.value_or(0),
      .to_watts = watts,
      .reason = std::move(reason)};
  const absl::Status set = accelerator_.SetPowerLimit(gpu.index, watts);
  if (!set.ok()) {
    d.action = PowerDecision::Action::kFailed;
    d.reason = absl::StrCat(lower ? "lower" : "restore", " power limit: ", set.message());
    return d;
  }
  if (lower) {
    state.lowered = true;
    state.lowered_watts = watts;
    state.restore_watts = d.from_watts;
  } else {
    state.lowered = false;
    state.idle_since.reset();
  }
  return d;
}

void PowerManager::FirstSight(const hw::GpuSample& gpu, double floor, GpuState& st) {
  if (st.seen) return;
  st.seen = true;
  const double limit = *gpu.power_limit_watts;
  const double max = std::max(*gpu.power_limit_min_watts, *gpu.power_limit_max_watts);
  const double default_watts = gpu.power_limit_default_watts.value_or(max);
  // After a restart: a limit at the floor is the one this manager set. (Disabled, it cannot
  // tell its own limits from an administrator's, so it claims none.)
  if (policy_.enabled && Same(limit, floor) && limit < default_watts - kSameWatts) {
    st.lowered = true;
    st.lowered_watts = limit;
    st.restore_watts = default_watts;
  }
}

absl::StatusOr<hw::Sample> PowerManager::Sample() {
  absl::StatusOr<hw::Sample> sample = accelerator_.TakeSample();
  if (sample.ok()) return sample;
  return absl::Status(sample.status().code(),
                      absl::StrCat("power manager: sample GPUs: ", sample.status().message()));
}

absl::StatusOr<std::vector<PowerDecision>> PowerManager::RestoreAll() {
  absl::StatusOr<hw::Sample> sample = Sample();
  if (!sample.ok()) return sample.status();
  std::vector<PowerDecision> decisions;
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_.Now();
  for (const hw::GpuSample& gpu : sample->gpus) {
    const std::optional<double> floor = FloorWatts(policy_, gpu);
    if (gpu.lost || !floor.has_value()) continue;
    GpuState& st = state_[gpu.index];
    FirstSight(gpu, *floor, st);
    if (!st.lowered || !Same(*gpu.power_limit_watts, st.lowered_watts)) continue;
    decisions.push_back(SetLimit(gpu, st, /*lower=*/false, st.restore_watts,
                                 "gpuop is being removed: the limit it lowered goes back", now));
  }
  return decisions;
}

PowerDecision PowerManager::Decide(const hw::GpuSample& gpu, const std::string& holder,
                                   bool allocations_known, const std::string& allocation_error,
                                   absl::Time now) {
  GpuState& st = state_[gpu.index];
  PowerDecision none{.time = now, .gpu_index = gpu.index};
  if (gpu.lost) {
    none.action = PowerDecision::Action::kSkipped;
    none.reason = "GPU lost";
    return none;
  }
  const std::optional<double> floor = FloorWatts(policy_, gpu);
  if (!floor.has_value()) {
    none.action = PowerDecision::Action::kSkipped;
    none.reason = "power management not supported";
    return none;
  }
  const double limit = *gpu.power_limit_watts;
  const double min = *gpu.power_limit_min_watts;
  const double max = std::max(min, *gpu.power_limit_max_watts);
  none.from_watts = none.to_watts = limit;
  FirstSight(gpu, *floor, st);
  if (st.lowered && !Same(limit, st.lowered_watts)) {
    st.lowered = false;
    st.idle_since.reset();
    none.reason = absl::StrCat("limit changed to ", limit, " W by someone else; left alone");
    return none;
  }

  std::string keep;  // why the GPU must run at its normal limit
  const unsigned int threshold = policy_.utilization_threshold_percent;
  if (!policy_.enabled) {
    keep = "power management disabled";
  } else if (gpu.gpu_utilization_percent.has_value() && *gpu.gpu_utilization_percent > threshold) {
    keep = absl::StrCat("busy: utilization ", *gpu.gpu_utilization_percent, "% > ", threshold, "%");
  } else if (!gpu.processes.empty()) {
    std::set<unsigned int> pids;
    for (const hw::ProcessUsage& p : gpu.processes) pids.insert(p.pid);
    keep = absl::StrCat("busy: processes ", absl::StrJoin(pids, ", "));
  } else if (!allocations_known) {
    keep = absl::StrCat("allocations unknown (", allocation_error, ")");
  } else if (!holder.empty()) {
    keep = absl::StrCat("allocated to ", holder);
  }
  if (!keep.empty()) {
    st.idle_since.reset();
    if (st.lowered) {
      return SetLimit(gpu, st, /*lower=*/false, std::clamp(st.restore_watts, min, max), keep, now);
    }
    none.reason = keep;
    return none;
  }

  if (!st.idle_since.has_value()) st.idle_since = now;
  const absl::Duration idle = now - *st.idle_since;
  if (st.lowered) {
    none.reason = absl::StrCat("idle and unallocated for ", absl::FormatDuration(idle),
                               "; lowered to ", st.lowered_watts, " W");
    return none;
  }
  if (idle < policy_.idle_for) {
    none.reason = absl::StrCat("idle and unallocated for ", absl::FormatDuration(idle), " of ",
                               absl::FormatDuration(policy_.idle_for));
    return none;
  }
  if (*floor >= limit - kSameWatts) {
    none.reason = absl::StrCat("limit ", limit, " W is at or below the floor ", *floor, " W");
    return none;
  }
  const std::string utilization =
      gpu.gpu_utilization_percent.has_value()
          ? absl::StrCat("utilization ", *gpu.gpu_utilization_percent, "% <= ", threshold, "%")
          : "utilization unknown";
  return SetLimit(gpu, st, /*lower=*/true, *floor,
                  absl::StrCat("idle for ", absl::FormatDuration(idle), " (", utilization,
                               ", no processes) and unallocated"),
                  now);
}

absl::StatusOr<std::vector<PowerDecision>> PowerManager::Tick() {
  absl::StatusOr<hw::Sample> sample = Sample();
  if (!sample.ok()) return sample.status();
  std::vector<PowerDecision> decisions;
  {
    absl::MutexLock lock(&mu_);
    // Without an inventory, device IDs cannot be mapped to GPUs: allocations are unknown.
    std::string error;
    if (!inventory_.has_value() || inventory_->gpus.size() != sample->gpus.size()) {
      absl::StatusOr<hw::Inventory> inventory = accelerator_.Discover();
      if (inventory.ok()) {
        inventory_ = *std::move(inventory);
      } else {
        error = absl::StrCat("discover GPUs: ", inventory.status().message());
      }
    }
    absl::StatusOr<std::vector<podresources::PodDevice>> allocations =
        pods_.List(options_.pod_resources_timeout);
    if (!allocations.ok()) error = std::string(allocations.status().message());
    const bool known = allocations.ok() && inventory_.has_value();
    const std::map<int, std::string> holders =
        known ? Holders(*allocations) : std::map<int, std::string>{};
    const absl::Time now = clock_.Now();
    for (const hw::GpuSample& gpu : sample->gpus) {
      const auto holder = holders.find(gpu.index);
      PowerDecision d =
          Decide(gpu, holder == holders.end() ? "" : holder->second, known, error, now);
      if (inventory_.has_value()) {
        for (const hw::Gpu& g : inventory_->gpus) {
          if (g.index == gpu.index) d.gpu_uuid = g.uuid;
        }
      }
      decisions.push_back(std::move(d));
    }
  }
  if (options_.on_decision) {
    for (const PowerDecision& d : decisions) {
      if (d.action != PowerDecision::Action::kNone) options_.on_decision(d);
    }
  }
  return decisions;
}

void PowerManager::Start() {
  thread_ = std::jthread([this](std::stop_token stop) {
    while (!stop.stop_requested()) {
      (void)Tick();  // a failed round changes nothing; the next one tries again
      absl::MutexLock lock(&stop_mu_);
      clock_.AwaitWithDeadline(stop_mu_, absl::Condition(&stopping_),
                               clock_.Now() + options_.interval);
      if (stopping_) return;
    }
  });
}

void PowerManager::Stop() {
  {
    absl::MutexLock lock(&stop_mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

}  // namespace gpuop::agent::power
