#ifndef GPUOP_AGENT_HEALTH_TRACKER_H_
#define GPUOP_AGENT_HEALTH_TRACKER_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/health/recovery_evidence.h"
#include "agent/health/xid_checks.h"
#include "common/clock.h"
#include "hw/model.h"

namespace gpuop::agent {

// What makes a device unhealthy: the XID checks and classes (xid_checks.h, xid_classes.h).
struct HealthPolicy {
  XidChecks xid_checks = ResolveXidChecks({});
};

// Why one device is unhealthy.
struct Unhealthy {
  // For machines, UpperCamelCase (a Node condition's reason): XidError, DoubleBitEccError,
  // GpuLost, RowRemapFailure, RowRemapPending, RetiredPagesPending, RecoveryActionRequired,
  // ThermalSlowdown, EventsUnavailable, GpuUnavailable.
  std::string code;
  // For people: "XID 48", "double-bit ECC error", "temperature 91 C at or above ...".
  std::string reason;
  absl::Time since;
  // The action that ends it (ResetGpu, RebootNode or ContactSupport); nullopt for a condition
  // that ends by itself (a temperature, a GPU that stops answering for a while).
  std::optional<XidAction> action;
};

// Per-GPU (and per-MIG-instance) health from hardware events and samples.
//
// An XID acts by its class (XidChecks::Action): Ignore and RestartApp leave the GPU healthy;
// ResetGpu, RebootNode and ContactSupport make it unhealthy until the action has happened, as
// RecoveryEvidence shows it (ObserveRecovery): a reboot (another boot ID) ends any of them; a
// driver reload or a reset of the GPU by gpuop after the condition began ends ResetGpu. A
// double-bit ECC error is ResetGpu. XID 79 (fallen off the bus) also ends when its lost GPU
// answers again. Time alone ends none of them.
//
// While samples report them: a lost GPU (RebootNode until it answers), a row-remap failure
// (ContactSupport), a pending row remap or pending retired pages (ResetGpu), a recovery action
// from NVML's recovery-action field, a temperature at or above the slowdown threshold. A GPU
// whose events cannot be watched stays unhealthy until the agent restarts. An XID attributed to
// a MIG instance affects only that instance's device. Conditions reported by another component
// (SetExternal) join these. Thread-safe.
class HealthTracker {
 public:
  HealthTracker(HealthPolicy policy, const common::Clock& clock)
      : policy_(std::move(policy)), clock_(clock) {}

  // Folds in events; returns true when some device's health changed.
  bool Observe(const std::vector<hw::HardwareEvent>& events);
  // Folds in a sample of `inventory`'s GPUs; returns true when some device's health changed.
  bool Observe(const hw::Inventory& inventory, const hw::Sample& sample);
  // Ends the conditions whose action `evidence` shows has happened; returns true when some
  // ended. The first call also learns the boot ID the conditions are recorded under.
  bool ObserveRecovery(const RecoveryEvidence& evidence);

  // Why the device with physical id `uuid` (a GPU UUID, MIG UUID or PCI address) is unhealthy,
  // or nullopt when it is healthy: of the conditions that hold, the one with the largest action.
  // `gpu_uuid` is its GPU (equal to `uuid` for a whole GPU); `gpu_instance` identifies a MIG
  // device's instance.
  std::optional<Unhealthy> Check(const std::string& gpu_uuid,
                                 std::optional<unsigned int> gpu_instance = std::nullopt) const;

  // Records the GPUs each of `inventories` (one per accelerator, in order) could not describe
  // (hw::Inventory::unavailable); each is dated from the first call that listed it. Returns true
  // when the set changed.
  bool ObserveUnavailable(const std::vector<hw::Inventory>& inventories);
  // Why GPU `index` of inventories[`inventory`] of the last ObserveUnavailable is unhealthy:
  // GpuUnavailable with the failed call; nullopt when it was not listed there.
  std::optional<Unhealthy> CheckUnavailable(size_t inventory, int index) const;

  // Replaces the conditions reported by another component (the health monitor's file), by GPU
  // UUID. Returns true when that changed anything.
  bool SetExternal(std::map<std::string, Unhealthy> external);

  // The conditions that wait for an action (from events), to survive a restart of the agent:
  //   {"bootId": "...", "gpus": {"<uuid>": {"event": C, "instances": {"<id>": C}}}}
  //   C = {"code", "reason", "since" (Unix microseconds), "xid", "action", "bootId"}
  nlohmann::json SaveState() const;
  // Adds the conditions of a SaveState() (a file written by an earlier agent). InvalidArgument
  // naming the field when it is malformed; nothing is added then.
  [[nodiscard]] absl::Status LoadState(const nlohmann::json& state);

 private:
  struct Condition {
    std::string code;
    std::string reason;
    absl::Time since;
    uint64_t xid = 0;  // the XID behind an XidError
    std::optional<XidAction> action;
    std::string boot_id;  // the boot it began in
  };
  struct GpuHealth {
    std::optional<Condition> event;  // XID / ECC: until its action happened
    std::optional<Condition> lost;
    std::optional<Condition> remap_failure;
    std::optional<Condition> remap_pending;
    std::optional<Condition> retired_pending;
    std::optional<Condition> recovery;  // NVML's recovery-action field
    std::optional<Condition> thermal;
    std::optional<Condition> unwatched;  // event registration refused: until the agent restarts
    std::map<unsigned int, Condition> instances;  // MIG-attributed XIDs by GPU instance
  };

  // Sets the event slot to the larger of what it holds and `c`; true when the device's
  // verdict may have changed.
  static bool Raise(std::optional<Condition>& slot, Condition c);
  // Sets or clears a sample-driven condition; returns true when it appeared or went away.
  static bool Track(std::optional<Condition>& slot, bool holds, const char* code,
                    const std::string& reason, std::optional<XidAction> action, absl::Time now);
  bool Done(const Condition& c, const std::string& uuid, const RecoveryEvidence& evidence) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Condition EventCondition(const char* code, std::string reason, absl::Time at,
                           XidAction action) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const HealthPolicy policy_;
  const common::Clock& clock_;
  mutable absl::Mutex mu_;
  std::string boot_id_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, GpuHealth> gpus_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Unhealthy> external_ ABSL_GUARDED_BY(mu_);
  // GPUs discovery could not describe, by inventory position and driver index (they have no
  // UUID to key them by).
  std::map<std::pair<size_t, int>, Condition> unavailable_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_HEALTH_TRACKER_H_
