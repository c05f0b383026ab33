#include "agent/health/tracker.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace gpuop::agent {
namespace {

constexpr uint64_t kXidFallenOffTheBus = 79;

}  // namespace

bool HealthTracker::Expired(const Condition& c, absl::Time now) const {
  return policy_.recover_after > absl::ZeroDuration() && now - c.last >= policy_.recover_after;
}

void HealthTracker::Set(std::optional<Condition>& slot, const char* code, const std::string& reason,
                        absl::Time now) {
  if (slot.has_value() && slot->code == code) {
    slot->reason = reason;
    slot->last = now;
  } else {
    slot = Condition{.code = code, .reason = reason, .since = now, .last = now};
  }
}

bool HealthTracker::Observe(const std::vector<hw::HardwareEvent>& events) {
  absl::MutexLock lock(&mu_);
  bool changed = false;
  for (const auto& e : events) {
    if (e.gpu_uuid.empty()) {
      // An XID NVML attributes to no GPU gpuop knows: every GPU, as NVIDIA's device plugin
      // marks every device when it cannot map an event to one.
      if (e.kind != hw::HardwareEvent::Kind::kXid || policy_.xid_checks.Ignored(e.xid)) continue;
      const std::string reason = absl::StrCat("XID ", e.xid, " on an unidentified GPU");
      const absl::Time at = e.time == absl::Time() ? clock_.Now() : e.time;
      for (auto& [uuid, gpu] : gpus_) {
        changed = changed || !gpu.event.has_value();
        Set(gpu.event, "XidError", reason, at);
      }
      continue;
    }
    GpuHealth& gpu = gpus_[e.gpu_uuid];
    const absl::Time at = e.time == absl::Time() ? clock_.Now() : e.time;
    switch (e.kind) {
      case hw::HardwareEvent::Kind::kXid: {
        if (policy_.xid_checks.Ignored(e.xid)) break;
        const std::string reason = absl::StrCat("XID ", e.xid);
        if (e.gpu_instance_id.has_value()) {
          auto [it, inserted] = gpu.instances.try_emplace(
              *e.gpu_instance_id,
              Condition{.code = "XidError", .reason = reason, .since = at, .last = at});
          if (!inserted) it->second.last = at;
          changed = changed || inserted;
        } else {
          changed = changed || !gpu.event.has_value();
          Set(gpu.event, "XidError", reason, at);
          gpu.event->xid = e.xid;
        }
        break;
      }
      case hw::HardwareEvent::Kind::kDoubleBitEcc:
        changed = changed || !gpu.event.has_value();
        Set(gpu.event, "DoubleBitEccError", "double-bit ECC error", at);
        break;
      case hw::HardwareEvent::Kind::kGpuLost:
        changed = changed || !gpu.lost.has_value();
        Set(gpu.lost, "GpuLost", "GPU lost", at);
        break;
      case hw::HardwareEvent::Kind::kSingleBitEcc:
        break;  // Corrected: a trend signal, not a failure.
      case hw::HardwareEvent::Kind::kUnwatched:
        changed = changed || !gpu.unwatched.has_value();
        Set(gpu.unwatched, "EventsUnavailable",
            absl::StrCat("its XID events cannot be watched (", e.reason, ")"), at);
        break;
    }
  }
  return changed;
}

bool HealthTracker::Track(std::optional<Condition>& slot, bool holds, const char* code,
                          const std::string& reason, absl::Time now) {
  if (holds) {
    const bool appeared = !slot.has_value();
    Set(slot, code, reason, now);
    return appeared;
  }
  if (!slot.has_value()) return false;
  slot.reset();
  return true;
}

bool HealthTracker::SetExternal(std::map<std::string, Unhealthy> external) {
  absl::MutexLock lock(&mu_);
  auto reasons = [](const std::map<std::string, Unhealthy>& m) {
    std::map<std::string, std::string> out;
    for (const auto& [uuid, u] : m) out[uuid] = u.reason;
    return out;
  };
  const bool changed = reasons(external) != reasons(external_);
  external_ = std::move(external);
  return changed;
}

bool HealthTracker::Observe(const hw::Inventory& inventory, const hw::Sample& sample) {
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_.Now();
  bool changed = false;
  for (const auto& s : sample.gpus) {
    auto g = std::find_if(inventory.gpus.begin(), inventory.gpus.end(),
                          [&](const hw::Gpu& gpu) { return gpu.index == s.index; });
    if (g == inventory.gpus.end()) continue;
    const std::string& uuid = g->vendor == hw::Vendor::kAmd ? g->pci_bus_id : g->uuid;
    GpuHealth& gpu = gpus_[uuid];
    if (s.lost) {
      changed = changed || !gpu.lost.has_value();
      Set(gpu.lost, "GpuLost", "GPU lost", now);
      continue;
    }
    if (gpu.lost.has_value()) {
      gpu.lost.reset();  // It answers again.
      // XID 79 is the driver's report of that loss ("fallen off the bus"): it ends with it.
      if (gpu.event.has_value() && gpu.event->xid == kXidFallenOffTheBus) gpu.event.reset();
      changed = true;
    }
    changed = Track(gpu.remap_failure, s.remapped_rows_failure.value_or(false), "RowRemapFailure",
                    "row remap failure", now) ||
              changed;
    changed = Track(gpu.retired_pending, s.retired_pages_pending.value_or(false),
                    "RetiredPagesPending", "retired pages pending a GPU reset", now) ||
              changed;
    const bool hot = s.temperature_celsius.has_value() &&
                     s.slowdown_temperature_celsius.has_value() &&
                     *s.temperature_celsius >= *s.slowdown_temperature_celsius;
    changed = Track(gpu.thermal, hot, "ThermalSlowdown",
                    hot ? absl::StrCat("temperature ", *s.temperature_celsius,
                                       " C at or above the slowdown threshold ",
                                       *s.slowdown_temperature_celsius, " C")
                        : "",
                    now) ||
              changed;
  }
  return changed;
}

std::optional<Unhealthy> HealthTracker::Check(const std::string& gpu_uuid,
                                              std::optional<unsigned int> gpu_instance) const {
  absl::MutexLock lock(&mu_);
  auto it = gpus_.find(gpu_uuid);
  if (it == gpus_.end()) {
    auto ext = external_.find(gpu_uuid);
    return ext == external_.end() ? std::nullopt : std::optional<Unhealthy>(ext->second);
  }
  const absl::Time now = clock_.Now();
  const GpuHealth& gpu = it->second;
  auto report = [](const Condition& c) {
    return Unhealthy{.code = c.code, .reason = c.reason, .since = c.since};
  };
  if (gpu.lost.has_value()) return report(*gpu.lost);
  if (gpu.remap_failure.has_value()) return report(*gpu.remap_failure);
  if (gpu.retired_pending.has_value()) return report(*gpu.retired_pending);
  if (gpu.thermal.has_value()) return report(*gpu.thermal);
  if (gpu.unwatched.has_value()) return report(*gpu.unwatched);
  if (gpu.event.has_value() && !Expired(*gpu.event, now)) return report(*gpu.event);
  if (gpu_instance.has_value()) {
    auto inst = gpu.instances.find(*gpu_instance);
    if (inst != gpu.instances.end() && !Expired(inst->second, now)) return report(inst->second);
  }
  if (auto ext = external_.find(gpu_uuid); ext != external_.end()) return ext->second;
  return std::nullopt;
}

bool HealthTracker::ObserveUnavailable(const std::vector<hw::Inventory>& inventories) {
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_.Now();
  std::map<std::pair<size_t, int>, Condition> unavailable;
  bool changed = false;
  for (size_t i = 0; i < inventories.size(); ++i) {
    for (const hw::UnavailableGpu& gpu : inventories[i].unavailable) {
      const std::pair<size_t, int> key{i, gpu.index};
      std::optional<Condition> slot;
      if (auto it = unavailable_.find(key); it != unavailable_.end()) slot = it->second;
      changed = changed || !slot.has_value();
      Set(slot, "GpuUnavailable", absl::StrCat("not usable: ", gpu.reason), now);
      unavailable[key] = *slot;
    }
  }
  changed = changed || unavailable.size() != unavailable_.size();
  unavailable_ = std::move(unavailable);
  return changed;
}

std::optional<Unhealthy> HealthTracker::CheckUnavailable(size_t inventory, int index) const {
  absl::MutexLock lock(&mu_);
  auto it = unavailable_.find({inventory, index});
  if (it == unavailable_.end()) return std::nullopt;
  return Unhealthy{.code = it->second.code, .reason = it->second.reason, .since = it->second.since};
}

absl::Time HealthTracker::NextRecovery() const {
  if (policy_.recover_after <= absl::ZeroDuration()) return absl::InfiniteFuture();
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_.Now();
  absl::Time next = absl::InfiniteFuture();
  for (const auto& [uuid, gpu] : gpus_) {
    if (gpu.event.has_value() && !Expired(*gpu.event, now)) {
      next = std::min(next, gpu.event->last + policy_.recover_after);
    }
    for (const auto& [id, c] : gpu.instances) {
      if (!Expired(c, now)) next = std::min(next, c.last + policy_.recover_after);
    }
  }
  return next;
}

}  // namespace gpuop::agent
