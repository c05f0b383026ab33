#include "agent/power/power_manager.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/podresources/attribution.h"
#include "common/status_macros.h"

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
      policy_(options_.policy),
      record_(options_.record != nullptr ? *options_.record : memory_record_) {}

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

PowerDecision PowerManager::SetLimit(const hw::GpuSample& gpu, const std::string& uuid,
                                     GpuState& state, bool lower, double watts, std::string reason,
                                     absl::Time now) {
  PowerDecision d{
      .time = now,
      .gpu_index = gpu.index,
      .gpu_uuid = uuid,
      .action = lower ? PowerDecision::Action::kLowered : PowerDecision::Action::kRestored,
      .from_watts = gpu.power_limit_watts.value_or(0),
      .to_watts = watts,
      .reason = std::move(reason)};
  auto failed = [&](absl::string_view what, const absl::Status& status) {
    d.action = PowerDecision::Action::kFailed;
    d.reason = absl::StrCat(what, ": ", status.message());
    return d;
  };
  if (lower) {
    // Written down first: a limit lowered without a record could not be given back exactly.
    const absl::Status recorded =
        Record(uuid, RecordedLimit{.original_watts = d.from_watts, .lowered_watts = watts});
    if (!recorded.ok()) return failed("record the limit before lowering it", recorded);
  }
  const absl::Status set = accelerator_.SetPowerLimit(gpu.index, watts);
  if (!set.ok()) {
    if (lower) (void)Record(uuid, std::nullopt);  // nothing was lowered
    return failed(lower ? "lower power limit" : "restore power limit", set);
  }
  if (lower) {
    state.lowered = true;
    state.lowered_watts = watts;
    state.restore_watts = d.from_watts;
  } else {
    state.lowered = false;
    state.idle_since.reset();
    // A record left behind is harmless: its GPU no longer has the lowered limit, so the next
    // first sight drops it.
    if (const absl::Status forgotten = Record(uuid, std::nullopt); !forgotten.ok()) {
      d.reason = absl::StrCat(d.reason, " (the record keeps it: ", forgotten.message(), ")");
    }
  }
  return d;
}

absl::Status PowerManager::LoadRecord() {
  if (recorded_.has_value()) return absl::OkStatus();
  absl::StatusOr<LimitMap> loaded = record_.Load();
  if (!loaded.ok()) {
    return absl::Status(loaded.status().code(),
                        absl::StrCat("read the power limit record: ", loaded.status().message()));
  }
  recorded_ = *std::move(loaded);
  return absl::OkStatus();
}

absl::Status PowerManager::Record(const std::string& uuid, std::optional<RecordedLimit> limit) {
  GPUOP_RETURN_IF_ERROR(LoadRecord());
  if (!limit.has_value() && !recorded_->contains(uuid)) return absl::OkStatus();
  GPUOP_RETURN_IF_ERROR(record_.Update(uuid, limit));
  if (limit.has_value()) {
    (*recorded_)[uuid] = *limit;
  } else {
    recorded_->erase(uuid);
  }
  return absl::OkStatus();
}

std::string PowerManager::UuidOf(int index) const {
  if (!inventory_.has_value()) return "";
  for (const hw::Gpu& g : inventory_->gpus) {
    if (g.index == index) return g.uuid;
  }
  return "";
}

std::string PowerManager::RefreshInventory(size_t gpus) {
  if (inventory_.has_value() && inventory_->gpus.size() == gpus) return "";
  absl::StatusOr<hw::Inventory> inventory = accelerator_.Discover();
  if (!inventory.ok()) return absl::StrCat("discover GPUs: ", inventory.status().message());
  inventory_ = *std::move(inventory);
  return "";
}

void PowerManager::FirstSight(const hw::GpuSample& gpu, const std::string& uuid, GpuState& st) {
  if (st.seen || !recorded_.has_value()) return;
  st.seen = true;
  const auto it = recorded_->find(uuid);
  if (it == recorded_->end()) return;
  if (Same(*gpu.power_limit_watts, it->second.lowered_watts)) {
    st.lowered = true;
    st.lowered_watts = it->second.lowered_watts;
    st.restore_watts = it->second.original_watts;
    return;
  }
  // The driver reloaded (limits go back to the default) or someone set another limit: there is
  // nothing of ours to give back.
  (void)Record(uuid, std::nullopt);
}

absl::StatusOr<hw::Sample> PowerManager::Sample() {
  absl::StatusOr<hw::Sample> sample = accelerator_.TakeSample();
  if (sample.ok()) return sample;
  return absl::Status(sample.status().code(),
                      absl::StrCat("power manager: sample GPUs: ", sample.status().message()));
}

absl::StatusOr<std::vector<PowerDecision>> PowerManager::RestoreAll(absl::string_view why) {
  absl::StatusOr<hw::Sample> sample = Sample();
  if (!sample.ok()) return sample.status();
  std::vector<PowerDecision> decisions;
  absl::MutexLock lock(&mu_);
  GPUOP_RETURN_IF_ERROR(LoadRecord());
  if (recorded_->empty()) return decisions;
  if (std::string error = RefreshInventory(sample->gpus.size()); !error.empty()) {
    return absl::UnavailableError(absl::StrCat("power manager: ", error));
  }
  const absl::Time now = clock_.Now();
  for (const hw::GpuSample& gpu : sample->gpus) {
    if (gpu.lost || !gpu.power_limit_watts.has_value()) continue;
    const std::string uuid = UuidOf(gpu.index);
    GpuState& st = state_[gpu.index];
    FirstSight(gpu, uuid, st);
    if (!st.lowered || !Same(*gpu.power_limit_watts, st.lowered_watts)) continue;
    decisions.push_back(
        SetLimit(gpu, uuid, st, /*lower=*/false, st.restore_watts, std::string(why), now));
  }
  return decisions;
}

PowerDecision PowerManager::Decide(const hw::GpuSample& gpu, const std::string& uuid,
                                   const std::string& holder, bool allocations_known,
                                   const std::string& allocation_error, absl::Time now) {
  GpuState& st = state_[gpu.index];
  PowerDecision none{.time = now, .gpu_index = gpu.index, .gpu_uuid = uuid};
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
  if (const absl::Status loaded = LoadRecord(); !loaded.ok() || uuid.empty()) {
    // Nothing is lowered that could not be written down and given back.
    none.action = PowerDecision::Action::kSkipped;
    none.reason = loaded.ok() ? "the GPU is not in the inventory (discovery failed): it could "
                                "not be written down by UUID"
                              : std::string(loaded.message());
    return none;
  }
  FirstSight(gpu, uuid, st);
  if (st.lowered && !Same(limit, st.lowered_watts)) {
    st.lowered = false;
    st.idle_since.reset();
    (void)Record(uuid, std::nullopt);
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
      return SetLimit(gpu, uuid, st, /*lower=*/false, std::clamp(st.restore_watts, min, max), keep,
                      now);
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
  return SetLimit(gpu, uuid, st, /*lower=*/true, *floor,
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
    std::string error = RefreshInventory(sample->gpus.size());
    absl::StatusOr<std::vector<podresources::PodDevice>> allocations =
        pods_.List(options_.pod_resources_timeout);
    if (!allocations.ok()) error = std::string(allocations.status().message());
    const bool known = allocations.ok() && inventory_.has_value();
    const std::map<int, std::string> holders =
        known ? Holders(*allocations) : std::map<int, std::string>{};
    const absl::Time now = clock_.Now();
    for (const hw::GpuSample& gpu : sample->gpus) {
      const auto holder = holders.find(gpu.index);
      decisions.push_back(Decide(gpu, UuidOf(gpu.index),
                                 holder == holders.end() ? "" : holder->second, known, error, now));
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
  if (!thread_.joinable()) return;
  thread_.join();
  absl::StatusOr<std::vector<PowerDecision>> restored =
      RestoreAll("the power manager is stopping: the limit it lowered goes back");
  if (!options_.on_decision) return;
  if (!restored.ok()) {
    options_.on_decision(PowerDecision{.time = clock_.Now(),
                                       .gpu_index = -1,
                                       .action = PowerDecision::Action::kFailed,
                                       .reason = std::string(restored.status().message())});
    return;
  }
  for (const PowerDecision& d : *restored) options_.on_decision(d);
}

}  // namespace gpuop::agent::power
