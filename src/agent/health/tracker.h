#ifndef GPUOP_AGENT_HEALTH_TRACKER_H_
#define GPUOP_AGENT_HEALTH_TRACKER_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/health/xid_checks.h"
#include "common/clock.h"
#include "hw/model.h"

namespace gpuop::agent {

// What makes a device unhealthy and when it may return.
struct HealthPolicy {
  // The XIDs that do not make a GPU unhealthy (xid_checks.h). By default the application errors
  // that say nothing about the GPU (NVIDIA's device plugin ignores the same ones): graphics
  // engine exception, page fault, GPU stopped processing, preemptive cleanup, video processor
  // exception, context switch timeout.
  XidChecks xid_checks = {.ignored = kDefaultIgnoredXids};
  // A GPU marked unhealthy by an XID or a double-bit ECC error returns to Healthy after this long
  // without another one. Zero keeps it unhealthy until the agent restarts (NVIDIA's behaviour).
  absl::Duration recover_after = absl::Minutes(10);
};

// Why one device is unhealthy.
struct Unhealthy {
  // For machines, UpperCamelCase (a Node condition's reason): XidError, DoubleBitEccError,
  // GpuLost, RowRemapFailure, RetiredPagesPending, ThermalSlowdown, EventsUnavailable.
  std::string code;
  // For people: "XID 79", "double-bit ECC error", "temperature 91 C at or above ...".
  std::string reason;
  absl::Time since;
};

// Per-GPU (and per-MIG-instance) health from hardware events and samples.
//
// A GPU is unhealthy while any of its conditions holds: a critical XID or double-bit ECC error
// within `recover_after`; a lost GPU (until a sample shows it answering again); while samples
// report them, a row-remap failure, retired pages pending (the GPU needs a reset), or a
// temperature at or above the slowdown threshold; or a condition another component reported
// (SetExternal). An XID attributed to a MIG instance affects only that instance's device.
// Thread-safe.
class HealthTracker {
 public:
  HealthTracker(HealthPolicy policy, const common::Clock& clock)
      : policy_(std::move(policy)), clock_(clock) {}

  // Folds in events; returns true when some device's health changed.
  bool Observe(const std::vector<hw::HardwareEvent>& events);
  // Folds in a sample of `inventory`'s GPUs; returns true when some device's health changed.
  bool Observe(const hw::Inventory& inventory, const hw::Sample& sample);

  // Why the device with physical id `uuid` (a GPU UUID, MIG UUID or PCI address) is unhealthy,
  // or nullopt when it is healthy. `gpu_uuid` is its GPU (equal to `uuid` for a whole GPU);
  // `gpu_instance` identifies a MIG device's instance.
  std::optional<Unhealthy> Check(const std::string& gpu_uuid,
                                 std::optional<unsigned int> gpu_instance = std::nullopt) const;

  // Records the GPUs each of `inventories` (one per accelerator, in order) could not describe
  // (hw::Inventory::unavailable); each is dated from the first call that listed it. Returns true
  // when the set changed.
  bool ObserveUnavailable(const std::vector<hw::Inventory>& inventories);
  // Why GPU `index` of inventories[`inventory`] of the last ObserveUnavailable is unhealthy:
  // GpuUnavailable with the failed call; nullopt when it was not listed there.
  std::optional<Unhealthy> CheckUnavailable(size_t inventory, int index) const;

  // When the next recovery is due (for a timer), or InfiniteFuture.
  absl::Time NextRecovery() const;

  // Replaces the conditions reported by another component (the health monitor's file), by GPU
  // UUID. Returns true when that changed anything.
  bool SetExternal(std::map<std::string, Unhealthy> external);

 private:
  struct Condition {
    std::string code;
    std::string reason;
    absl::Time since;
    absl::Time last;   // the latest occurrence
    uint64_t xid = 0;  // the XID behind an XidError
  };
  struct GpuHealth {
    std::optional<Condition> event;  // XID / ECC, recovers after quiet time
    std::optional<Condition> lost;
    std::optional<Condition> remap_failure;
    std::optional<Condition> retired_pending;
    std::optional<Condition> thermal;
    std::optional<Condition> unwatched;  // event registration refused: until the agent restarts
    std::map<unsigned int, Condition> instances;  // MIG-attributed XIDs by GPU instance
  };
  // GPUs discovery could not describe, by inventory position and driver index (they have no
  // UUID to key them by).
  std::map<std::pair<size_t, int>, Condition> unavailable_ ABSL_GUARDED_BY(mu_);

  bool Expired(const Condition& c, absl::Time now) const;
  static void Set(std::optional<Condition>& slot, const char* code, const std::string& reason,
                  absl::Time now);
  // Sets or clears a sample-driven condition; returns true when it appeared or went away.
  static bool Track(std::optional<Condition>& slot, bool holds, const char* code,
                    const std::string& reason, absl::Time now);

  const HealthPolicy policy_;
  const common::Clock& clock_;
  mutable absl::Mutex mu_;
  std::map<std::string, GpuHealth> gpus_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Unhealthy> external_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_HEALTH_TRACKER_H_
