#ifndef GPUOP_AGENT_MIG_MIG_MANAGER_H_
#define GPUOP_AGENT_MIG_MIG_MANAGER_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/mig/client_pause.h"
#include "agent/mig/mig_applier.h"
#include "agent/mig/mig_node.h"
#include "common/clock.h"
#include "hw/accelerator.h"

namespace gpuop::agent::mig {

// The node label that names the wanted layout, and where the outcome is published.
inline constexpr char kConfigLabel[] = "nvidia.com/mig.config";
inline constexpr char kStateLabel[] = "nvidia.com/mig.config.state";
inline constexpr char kGpuopStateLabel[] = "gpuop.io/mig.config.state";  // mirror
inline constexpr char kReasonAnnotation[] = "gpuop.io/mig.config.reason";
inline constexpr char kStatePending[] = "pending";
inline constexpr char kStateSuccess[] = "success";
inline constexpr char kStateFailed[] = "failed";
inline constexpr char kStateRebooting[] = "rebooting";

struct MigManagerOptions {
  // The mig-parted style configuration (see mig_config.h), re-read at every sync.
  std::filesystem::path config_file;
  // Rewritten after every layout change (see layout_file.h); empty: none.
  std::filesystem::path layout_file;
  // GPU clients paused around a change, and the value a paused label without a record gets.
  std::vector<PausedComponent> components = DefaultPausedComponents();
  std::string restore_fallback = "true";
  // A change (from writing `pending` to applying the layout) that takes longer fails with
  // "timed out while <step>"; the clients are restored either way.
  absl::Duration change_deadline = absl::Minutes(10);
  // Longest wait for the paused clients' pods to leave the node (within the change deadline).
  absl::Duration pod_stop_timeout = absl::Minutes(5);
  absl::Duration poll_interval = absl::Seconds(2);
  // Re-read everything this often even without a label change.
  absl::Duration resync_interval = absl::Minutes(5);
  // Retries of a failed layout: transient failures (busy GPUs, API errors, timeouts) back off
  // exponentially from retry_base to retry_cap; a layout that cannot be had (InvalidArgument:
  // unknown name, profile not offered, does not fit) waits until the label or the config file
  // changes.
  absl::Duration retry_base = absl::Seconds(30);
  absl::Duration retry_cap = absl::Minutes(10);
  // How long Stop() lets a hardware operation in progress finish before giving up on it.
  absl::Duration stop_grace = absl::Seconds(10);
  // Apply even when processes run on GPUs whose layout changes (they will crash).
  bool force = false;
  // A mode change the GPU reset could not activate (the reset refused: a process still holds a
  // GPU; or a platform that needs a reboot): with_reboot sets the state `rebooting` and asks for
  // a reboot through `reboot_annotation` on the Node (the annotation remediation's reboot tool
  // acts on), as mig-parted's WITH_REBOOT reboots the node; the clients stay paused until the
  // change completes after the reboot. Without it the change fails, saying a reboot applies it.
  bool with_reboot = false;
  std::string reboot_annotation = "gpuop.io/reboot-requested";
  // A reboot requested this long ago that has not happened (no reboot tool acts on the
  // annotation) ends the wait: the request is withdrawn, the clients are restored and the change
  // fails, saying so, rather than leaving the node's GPU clients paused for good.
  absl::Duration reboot_timeout = absl::Minutes(30);
  const common::Clock* clock = &common::Clock::Real();
};

// What one sync did.
struct MigSyncResult {
  enum class Outcome {
    kIdle,      // no layout selected (and nothing left to clean up)
    kInPlace,   // the layout was already in place: no pause, no hardware change
    kApplied,   // the layout was applied: state success
    kFailed,    // state failed, with `status` as the reason
    kDeferred,  // the layout failed before; waiting for its retry time or a change
    kError,     // the Node could not be read; retried soon
  };
  Outcome outcome = Outcome::kIdle;
  std::string layout;
  absl::Status status;
};

// Keeps the GPUs' MIG layout equal to the one the node label nvidia.com/mig.config names.
//
// A sync reads the Node, the configuration and the GPUs, and plans. A layout already in place
// ends in `success` at once, with no pause and no hardware call. Otherwise the node goes
// `pending` (both state labels, the reason annotation, an Event), GPUs that change are checked
// for processes (refused, naming the PIDs, unless `force`), the GPU clients are paused and their
// pods awaited, the GPUs checked again, the plan applied and verified (on a helper thread, so
// a hardware call that never returns cannot hold the node), the layout file rewritten, the
// clients restored and the state set to `success`; any failure sets `failed` with the reason.
//
// A mode change the driver leaves pending (it found the GPU in use) is completed with a GPU reset
// once every client is stopped: the GPUs are reset (nvidia-smi -r, this process's own NVML
// released meanwhile), re-discovered and the layout applied again. A reset that is refused ends
// in `failed`, or with `with_reboot` in `rebooting` and a reboot request; the next sync after
// the reboot completes the change, or fails it when the mode still did not take effect.
//
// Never wedged in `pending`: every path out of a change (failure, the deadline, Stop()) ends in
// `success` or `failed` with the clients restored (or `rebooting`, clients paused, while the
// reboot request stands). What cannot be written right then (API down)
// is retried by the next sync, which also recovers a node an earlier agent left `pending` or
// paused: the pause record on the Node restores the clients' exact earlier values.
//
// Contract with the operator: a deploy label set to "paused-for-mig-change" removes that
// component's pods from the node, and the operator leaves the value alone until restored.
//
// Thread-safe. `accelerator` and `node` must outlive it.
class MigManager {
 public:
  MigManager(hw::Accelerator& accelerator, MigNode& node, MigManagerOptions options);
  // Stop().
  ~MigManager();
  MigManager(const MigManager&) = delete;
  MigManager& operator=(const MigManager&) = delete;

  // Follows the label and syncs on a worker thread: at each change, every resync_interval, and
  // at retry times.
  void Start();
  // Interrupts a change in progress (failed: "interrupted by agent shutdown while <step>",
  // clients restored), stops the worker and the watch. Idempotent. A hardware operation in
  // progress gets up to stop_grace to return before the change is finished as failed; a driver
  // call that never returns still keeps Stop() waiting for its thread (which uses the
  // accelerator), with the node already restored.
  void Stop();
  // Makes the worker sync now.
  void Trigger();

  // One sync on the caller's thread (what the worker runs). Not concurrently with the worker.
  MigSyncResult SyncOnce();

  MigSyncResult last_result() const;
  int64_t syncs() const;

 private:
  struct Change;
  struct HardwareRun;
  struct Retry {
    std::string key;  // layout name + config digest
    int attempts = 0;
    absl::Time at = absl::InfinitePast();
    std::string reason;
  };

  MigSyncResult Sync();
  // The change itself: every step from `pending` to a rewritten layout file.
  absl::Status RunChange(Change& change, const LayoutPlan& initial_plan);
  // Ends a change: restores the clients and writes the state. Tolerates failing writes (the
  // next sync repeats them).
  void Finish(Change& change, const absl::Status& outcome);
  absl::Status WriteState(const char* state, const std::string& reason);
  absl::Status Write(const NodeWrite& write);
  absl::Status Restore();
  absl::Status CheckProcesses(const LayoutPlan& plan);
  absl::Status WaitForClients(Change& change);
  // FailedPrecondition while a hardware run has not returned.
  absl::Status HardwareIdle() const;
  // Runs `job` on a helper thread (a driver call that never returns cannot hold the node), until
  // it returns, the change's deadline or Stop().
  absl::Status RunOnHelper(Change& change, std::function<ApplyResult(const ApplyCheck&)> job,
                           ApplyResult& result);
  absl::Status ApplyOnHelper(Change& change, const LayoutPlan& plan, ApplyResult& result);
  // Resets the GPUs whose mode change is pending and applies the layout again.
  absl::Status ResetAndApply(Change& change, std::vector<int> pending, ApplyResult& result);
  // OK while the change may go on; DeadlineExceeded after its deadline, Cancelled on Stop().
  absl::Status Proceed(const Change& change, const std::string& step) const;
  // Waits on the clock until `deadline` or Stop(); false when stopped.
  bool WaitUntil(absl::Time deadline);
  void RecordFailure(const std::string& key, const absl::Status& status);
  void Loop();

  hw::Accelerator& accelerator_;
  MigNode& node_;
  const MigManagerOptions options_;
  const common::Clock& clock_;

  // The Node as last read, with this manager's writes applied since. Worker only.
  NodeMeta meta_;
  Retry retry_;
  bool unfinished_ = false;  // a write that ends a change failed; the next sync repeats it

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool triggered_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  // A hardware run that has not returned (stuck in a driver call), and since when.
  std::shared_ptr<HardwareRun> hardware_ ABSL_GUARDED_BY(mu_);
  MigSyncResult last_result_ ABSL_GUARDED_BY(mu_);
  int64_t syncs_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Mutex stop_mu_;                         // serializes Stop()
  std::vector<std::jthread> hardware_threads_;  // worker only; joined by Stop()
  std::jthread worker_;
};

}  // namespace gpuop::agent::mig

#endif  // GPUOP_AGENT_MIG_MIG_MANAGER_H_
