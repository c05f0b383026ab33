#ifndef GPUOP_AGENT_POWER_POWER_MANAGER_H_
#define GPUOP_AGENT_POWER_POWER_MANAGER_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/podresources/pod_resources.h"
#include "agent/power/limit_record.h"
#include "agent/power/power_policy.h"
#include "common/clock.h"
#include "hw/accelerator.h"

namespace gpuop::agent::power {

// What the power manager decided for one GPU in one round: the structured record it logs.
struct PowerDecision {
  enum class Action {
    kNone,      // nothing to do
    kLowered,   // idle and unallocated long enough: limit lowered to the floor
    kRestored,  // allocated, busy, unknown or disabled again: limit restored
    kSkipped,   // GPU lost, or no power management
    kFailed,    // setting the limit failed; tried again next round
  };
  absl::Time time;
  int gpu_index = 0;
  std::string gpu_uuid;
  Action action = Action::kNone;
  double from_watts = 0;  // the limit before (kLowered, kRestored, kFailed)
  double to_watts = 0;    // the limit set or attempted
  // Why: "idle for 15m (utilization 0% <= 5%, no processes) and unallocated",
  // "allocated to ml/train-0", "busy: utilization 80% > 5%", "processes 4242".
  std::string reason;
};

std::string ActionName(PowerDecision::Action action);  // "none", "lowered", ...

struct PowerManagerOptions {
  PowerPolicy policy;  // the initial policy
  // How often Start()'s thread runs a round.
  absl::Duration interval = absl::Seconds(30);
  // Longest wait for the kubelet's PodResources answer; past it, allocations are unknown.
  absl::Duration pod_resources_timeout = absl::Seconds(5);
  // Called with every decision other than kNone (the decision log).
  std::function<void(const PowerDecision&)> on_decision;
  const common::Clock* clock = &common::Clock::Real();
  // Where lowered limits are written down; nullptr: in memory only (lost with the process).
  LimitRecord* record = nullptr;
};

// Lowers the power limit of idle, unallocated GPUs to the policy's floor within the GPU's
// [min, max] constraints: idle is utilization at or below the threshold (or unknown, as on
// MIG-enabled GPUs) and no compute processes; unallocated is no pod holding the GPU, one of its
// MIG devices or (through DRA) any device on it. It gives back the limit it found as soon as the
// GPU is allocated or busy, when allocations cannot be read (the safe assumption is
// "allocated"), when the policy is disabled (SetPolicy), and when it stops. A limit someone else
// changes while lowered is theirs: it is left alone.
//
// The manager works from the management limit (the one set), never from the enforced limit,
// which other limiters can hold lower: taking that for the GPU's own limit would "restore" a cap
// that was never the GPU's setting.
//
// Every limit it lowers is written to the LimitRecord before it is lowered (no record, no
// change), with the limit it found, and taken out once given back. A restarted manager, or
// `power --restore` at uninstall, gives back exactly what the record says; a GPU whose limit is
// no longer the lowered one (the driver reloaded, someone set another) leaves the record.
//
// Thread-safe. `accelerator`, `pods` and the record must outlive it.
class PowerManager {
 public:
  PowerManager(hw::Accelerator& accelerator, podresources::PodLister& pods,
               PowerManagerOptions options);
  ~PowerManager();  // Stop()
  PowerManager(const PowerManager&) = delete;
  PowerManager& operator=(const PowerManager&) = delete;

  // One round: one sample, one allocation read, a decision per GPU (in index order), and the
  // limit changes. Fails only when the GPUs cannot be sampled. When the GPUs cannot be
  // discovered (needed to map device IDs to GPUs), allocations count as unknown.
  [[nodiscard]] absl::StatusOr<std::vector<PowerDecision>> Tick();

  // Gives back every limit the record says was lowered and still is: the uninstall's undo, and
  // what Stop() does. Limits anyone else set stay. Fails when the GPUs cannot be sampled or
  // discovered or the record cannot be read; a failed write is a kFailed decision.
  [[nodiscard]] absl::StatusOr<std::vector<PowerDecision>> RestoreAll(
      absl::string_view why = "gpuop is being removed: the limit it lowered goes back");

  // Replaces the policy (the cluster policy changed); the next round applies it.
  void SetPolicy(const PowerPolicy& policy);

  // Rounds every `interval` on a thread until Stop(). Stop() on a started manager gives back
  // every limit it lowered (RestoreAll): the component stopping is the policy no longer asking
  // for it (disabled, uninstalled, the node left the pool) or an update that starts over.
  void Start();
  void Stop();

  // What the manager tracks about a GPU.
  struct GpuState {
    bool seen = false;
    std::optional<absl::Time> idle_since;  // idle and unallocated since
    bool lowered = false;
    double lowered_watts = 0;  // the limit it set
    double restore_watts = 0;  // the limit it found and gives back
  };
  std::map<int, GpuState> state() const;

 private:
  // One sample of the GPUs; the error names what failed.
  absl::StatusOr<hw::Sample> Sample();
  PowerDecision Decide(const hw::GpuSample& gpu, const std::string& uuid, const std::string& holder,
                       bool allocations_known, const std::string& allocation_error, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  PowerDecision SetLimit(const hw::GpuSample& gpu, const std::string& uuid, GpuState& state,
                         bool lower, double watts, std::string reason, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The first time the manager sees a GPU: takes over what the record says it lowered, or
  // drops the entry when the limit is no longer the lowered one.
  void FirstSight(const hw::GpuSample& gpu, const std::string& uuid, GpuState& st)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Loads the record on first use; the error when it cannot be read.
  absl::Status LoadRecord() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes the record with `uuid` set to `limit` (removed when nullopt).
  absl::Status Record(const std::string& uuid, std::optional<RecordedLimit> limit)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The UUID of the GPU at `index` in the inventory; "" when unknown.
  std::string UuidOf(int index) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Discovers the GPUs when the inventory is missing or does not have `gpus` GPUs; the error
  // when that fails ("" when the inventory is good).
  std::string RefreshInventory(size_t gpus) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // GPU index -> the first pod found holding it; refreshes the inventory when a device is
  // unknown (its MIG layout changed).
  std::map<int, std::string> Holders(const std::vector<podresources::PodDevice>& devices)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  hw::Accelerator& accelerator_;
  podresources::PodLister& pods_;
  const PowerManagerOptions options_;
  const common::Clock& clock_;

  mutable absl::Mutex mu_;  // held through a round: rounds do not overlap
  PowerPolicy policy_ ABSL_GUARDED_BY(mu_);
  std::optional<hw::Inventory> inventory_ ABSL_GUARDED_BY(mu_);
  std::map<int, GpuState> state_ ABSL_GUARDED_BY(mu_);
  MemoryLimitRecord memory_record_;
  LimitRecord& record_;
  std::optional<LimitMap> recorded_ ABSL_GUARDED_BY(mu_);  // loaded on first use
  absl::Mutex stop_mu_;
  bool stopping_ ABSL_GUARDED_BY(stop_mu_) = false;
  std::jthread thread_;
};

}  // namespace gpuop::agent::power

#endif  // GPUOP_AGENT_POWER_POWER_MANAGER_H_
