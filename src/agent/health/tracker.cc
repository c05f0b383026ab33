#include "agent/health/tracker.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace gpuop::agent {
namespace {

constexpr uint64_t kXidFallenOffTheBus = 79;

// NVML's nvmlDeviceGpuRecoveryAction_t (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION): NONE 0, GPU_RESET
// 1, NODE_REBOOT 2, DRAIN_P2P 3, DRAIN_AND_RESET 4; a value this table does not know needs a
// person.
std::optional<XidAction> RecoveryFieldAction(unsigned int value) {
  switch (value) {
    case 0:
      return std::nullopt;
    case 1:
    case 3:
    case 4:
      return XidAction::kResetGpu;
    case 2:
      return XidAction::kRebootNode;
    default:
      return XidAction::kContactSupport;
  }
}

const char* RecoveryFieldName(unsigned int value) {
  switch (value) {
    case 1:
      return "GPU_RESET";
    case 2:
      return "NODE_REBOOT";
    case 3:
      return "DRAIN_P2P";
    case 4:
      return "DRAIN_AND_RESET";
    default:
      return "unknown";
  }
}

int Rank(const std::optional<XidAction>& a) { return a.has_value() ? 1 + static_cast<int>(*a) : 0; }

}  // namespace

HealthTracker::Condition HealthTracker::EventCondition(const char* code, std::string reason,
                                                       absl::Time at, XidAction action) const {
  return Condition{.code = code,
                   .reason = std::move(reason),
                   .since = at,
                   .action = action,
                   .boot_id = boot_id_};
}

bool HealthTracker::Raise(std::optional<Condition>& slot, Condition c) {
  // The larger action stands; an equal one keeps its onset.
  if (slot.has_value() && Rank(slot->action) >= Rank(c.action)) return false;
  slot = std::move(c);
  return true;
}

bool HealthTracker::Observe(const std::vector<hw::HardwareEvent>& events) {
  absl::MutexLock lock(&mu_);
  bool changed = false;
  for (const auto& e : events) {
    const absl::Time at = e.time == absl::Time() ? clock_.Now() : e.time;
    const XidAction action = policy_.xid_checks.Action(e.xid);
    if (e.gpu_uuid.empty()) {
      // An XID NVML attributes to no GPU gpuop knows: every GPU, as NVIDIA's device plugin
      // marks every device when it cannot map an event to one.
      if (e.kind != hw::HardwareEvent::Kind::kXid || !MarksUnhealthy(action)) continue;
      for (auto& [uuid, gpu] : gpus_) {
        Condition c = EventCondition(
            "XidError", absl::StrCat("XID ", e.xid, " on an unidentified GPU"), at, action);
        c.xid = e.xid;
        changed = Raise(gpu.event, std::move(c)) || changed;
      }
      continue;
    }
    GpuHealth& gpu = gpus_[e.gpu_uuid];
    switch (e.kind) {
      case hw::HardwareEvent::Kind::kXid: {
        if (!MarksUnhealthy(action)) break;  // Ignore, RestartApp: the GPU is fine.
        Condition c = EventCondition("XidError", absl::StrCat("XID ", e.xid), at, action);
        c.xid = e.xid;
        if (e.gpu_instance_id.has_value()) {
          auto [it, inserted] = gpu.instances.try_emplace(*e.gpu_instance_id, c);
          if (!inserted && Rank(it->second.action) < Rank(c.action)) it->second = c;
          changed = changed || inserted;
        } else {
          changed = Raise(gpu.event, std::move(c)) || changed;
        }
        break;
      }
      case hw::HardwareEvent::Kind::kDoubleBitEcc:
        changed = Raise(gpu.event, EventCondition("DoubleBitEccError", "double-bit ECC error", at,
                                                  XidAction::kResetGpu)) ||
                  changed;
        break;
      case hw::HardwareEvent::Kind::kGpuLost:
        changed =
            Track(gpu.lost, true, "GpuLost", "GPU lost", XidAction::kRebootNode, at) || changed;
        break;
      case hw::HardwareEvent::Kind::kSingleBitEcc:
        break;  // Corrected: a trend signal, not a failure.
      case hw::HardwareEvent::Kind::kUnwatched:
        changed = Track(gpu.unwatched, true, "EventsUnavailable",
                        absl::StrCat("its XID events cannot be watched (", e.reason, ")"),
                        std::nullopt, at) ||
                  changed;
        break;
    }
  }
  return changed;
}

bool HealthTracker::Track(std::optional<Condition>& slot, bool holds, const char* code,
                          const std::string& reason, std::optional<XidAction> action,
                          absl::Time now) {
  if (holds) {
    const bool appeared = !slot.has_value() || slot->action != action;
    if (!slot.has_value() || slot->code != code) {
      slot = Condition{.code = code, .since = now};
    }
    slot->reason = reason;
    slot->action = action;
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
      changed =
          Track(gpu.lost, true, "GpuLost", "GPU lost", XidAction::kRebootNode, now) || changed;
      continue;
    }
    if (gpu.lost.has_value()) {
      gpu.lost.reset();  // It answers again: it was reset, or came back on its own.
      // XID 79 is the driver's report of that loss ("fallen off the bus"): it ends with it.
      if (gpu.event.has_value() && gpu.event->xid == kXidFallenOffTheBus) gpu.event.reset();
      changed = true;
    }
    changed = Track(gpu.remap_failure, s.remapped_rows_failure.value_or(false), "RowRemapFailure",
                    "row remap failure", XidAction::kContactSupport, now) ||
              changed;
    changed = Track(gpu.remap_pending, s.remapped_rows_pending.value_or(false), "RowRemapPending",
                    "row remap pending a GPU reset", XidAction::kResetGpu, now) ||
              changed;
    changed =
        Track(gpu.retired_pending, s.retired_pages_pending.value_or(false), "RetiredPagesPending",
              "retired pages pending a GPU reset", XidAction::kResetGpu, now) ||
        changed;
    const unsigned int recovery = s.recovery_action.value_or(0);
    changed =
        Track(
            gpu.recovery, RecoveryFieldAction(recovery).has_value(), "RecoveryActionRequired",
            absl::StrCat("the driver asks for ", RecoveryFieldName(recovery), " (", recovery, ")"),
            RecoveryFieldAction(recovery), now) ||
        changed;
    const bool hot = s.temperature_celsius.has_value() &&
                     s.slowdown_temperature_celsius.has_value() &&
                     *s.temperature_celsius >= *s.slowdown_temperature_celsius;
    changed = Track(gpu.thermal, hot, "ThermalSlowdown",
                    hot ? absl::StrCat("temperature ", *s.temperature_celsius,
                                       " C at or above the slowdown threshold ",
                                       *s.slowdown_temperature_celsius, " C")
                        : "",
                    std::nullopt, now) ||
              changed;
  }
  return changed;
}

bool HealthTracker::Done(const Condition& c, const std::string& uuid,
                         const RecoveryEvidence& evidence) const {
  if (!c.boot_id.empty() && !boot_id_.empty() && c.boot_id != boot_id_) return true;  // rebooted
  if (c.action != XidAction::kResetGpu) return false;
  return evidence.DriverLoadedAt() > c.since || evidence.GpuResetAt(uuid) > c.since;
}

bool HealthTracker::ObserveRecovery(const RecoveryEvidence& evidence) {
  absl::MutexLock lock(&mu_);
  const std::string boot = evidence.BootId();
  if (!boot.empty()) boot_id_ = boot;
  bool changed = false;
  for (auto& [uuid, gpu] : gpus_) {
    if (gpu.event.has_value()) {
      if (gpu.event->boot_id.empty()) gpu.event->boot_id = boot_id_;
      if (Done(*gpu.event, uuid, evidence)) {
        gpu.event.reset();
        changed = true;
      }
    }
    for (auto it = gpu.instances.begin(); it != gpu.instances.end();) {
      if (it->second.boot_id.empty()) it->second.boot_id = boot_id_;
      if (Done(it->second, uuid, evidence)) {
        it = gpu.instances.erase(it);
        changed = true;
      } else {
        ++it;
      }
    }
  }
  return changed;
}

std::optional<Unhealthy> HealthTracker::Check(const std::string& gpu_uuid,
                                              std::optional<unsigned int> gpu_instance) const {
  absl::MutexLock lock(&mu_);
  auto ext = external_.find(gpu_uuid);
  auto it = gpus_.find(gpu_uuid);
  if (it == gpus_.end()) {
    return ext == external_.end() ? std::nullopt : std::optional<Unhealthy>(ext->second);
  }
  const GpuHealth& gpu = it->second;
  const Condition* worst = nullptr;
  for (const std::optional<Condition>* slot :
       {&gpu.lost, &gpu.event, &gpu.remap_failure, &gpu.remap_pending, &gpu.retired_pending,
        &gpu.recovery, &gpu.thermal, &gpu.unwatched}) {
    if (slot->has_value() && (worst == nullptr || Rank((*slot)->action) > Rank(worst->action))) {
      worst = &**slot;
    }
  }
  if (worst == nullptr && gpu_instance.has_value()) {
    if (auto inst = gpu.instances.find(*gpu_instance); inst != gpu.instances.end()) {
      worst = &inst->second;
    }
  }
  if (worst != nullptr) {
    return Unhealthy{.code = worst->code,
                     .reason = worst->reason,
                     .since = worst->since,
                     .action = worst->action};
  }
  if (ext != external_.end()) return ext->second;
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
      changed = Track(slot, true, "GpuUnavailable", absl::StrCat("not usable: ", gpu.reason),
                      std::nullopt, now) ||
                changed;
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

}  // namespace gpuop::agent
