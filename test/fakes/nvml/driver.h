#ifndef GPUOP_TEST_FAKES_NVML_DRIVER_H_
#define GPUOP_TEST_FAKES_NVML_DRIVER_H_

// The process-wide state of the fake library: the reference-counted init, the running Machine,
// the scenario clock and the control file, all behind one mutex. Every NVML export goes through
// Driver::Get(). Configuration comes from the environment, read when the first nvmlInit_v2 (after
// a full shutdown) loads the scenario:
//   GPUOP_FAKE_NVML_SCENARIO    a preset name (scenarios/<name>.yaml next to the library) or a
//                               path to a scenario file (contains '/' or ends in .yaml/.yml);
//                               unset: the scenario embedded in the library file (embedded.h),
//                               which fixes the node identity (GPUOP_FAKE_NVML_NODE is ignored)
//   GPUOP_FAKE_NVML_CONTROL     a control file to follow (control.h); unset with an embedded
//                               scenario: the node's, kNodeControlFile beside the library
//   GPUOP_FAKE_NVML_TIME_SCALE  scenario seconds per real second (default 1; 0 freezes the
//                               clock so that only "advance" moves it)
//   GPUOP_FAKE_NVML_NODE        mixed into derived UUIDs and serials (e.g. the node name)
//   GPUOP_FAKE_NVML_STATE       the node's MIG state file (node_state.h); unset with an embedded
//                               scenario: kNodeStateFile beside the library; neither: MIG state
//                               stays in this process and goes with the last nvmlShutdown
// A scenario with `device_nodes` makes the GPUs a process sees depend on the device nodes it can
// open (device_nodes.h); the library holds them open while initialised.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "hw/nvml/nvml_abi.h"
#include "test/fakes/nvml/control.h"
#include "test/fakes/nvml/machine.h"
#include "test/fakes/nvml/node_control.h"
#include "test/fakes/nvml/node_state.h"

namespace gpuop::fakenvml {

class Driver {
 public:
  static Driver& Get();

  // Reference-counted. The first call loads the scenario; on failure returns DRIVER_NOT_LOADED
  // (NO_PERMISSION when nvidiactl cannot be opened for lack of permission) and prints why to
  // stderr (once per distinct reason).
  nvmlReturn_t Init();
  // UNINITIALIZED without a matching Init; the last one discards the machine and its handles.
  nvmlReturn_t Shutdown();

  // Runs fn(Machine&) -> nvmlReturn_t under the lock, after bringing the scenario clock and the
  // control file up to date. UNINITIALIZED when the library is not initialised.
  template <typename Fn>
  nvmlReturn_t Run(Fn&& fn) {
    std::lock_guard lock(mu_);
    if (machine_ == nullptr) return NVML_ERROR_UNINITIALIZED;
    const uint64_t version = machine_->events().version();
    SyncLocked();
    const nvmlReturn_t result = fn(*machine_);
    if (waiters_ > 0 && machine_->events().version() != version) cv_.notify_all();
    return result;
  }

  // As Run, for a call that may change MIG state (mode, instances, a reset). With a node state
  // file, fn runs holding the file's lock, on the machine brought up to date with the file read
  // inside that lock, and what it changed is written back before the lock is released. A file
  // that cannot be locked, read or written is reported once on stderr and the change stays in
  // this process.
  template <typename Fn>
  nvmlReturn_t RunMigChange(Fn&& fn) {
    std::lock_guard lock(mu_);
    if (machine_ == nullptr) return NVML_ERROR_UNINITIALIZED;
    SyncLocked();
    return ChangeMigLocked([&] { return fn(*machine_); });
  }

  // nvmlEventSetWait_v2: blocks up to `timeout_ms` for an event on `set`, releasing the lock while
  // it waits; TIMEOUT when none arrives.
  nvmlReturn_t WaitEvent(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeout_ms);

 private:
  Driver() = default;

  absl::StatusOr<std::unique_ptr<Machine>> Load();
  // From GPUOP_FAKE_NVML_SCENARIO, else from the library's embedded scenario; `origin` names
  // where it came from, for errors.
  absl::StatusOr<Scenario> LoadScenario(std::string* origin);
  // Applies changes other processes made to the node state file, control-file lines and due
  // timeline entries.
  void SyncLocked();
  // The capability nodes of the MIG instances that exist (device_nodes.h), at each first init:
  // what the real user-space driver does for a root process such as nvidia-smi.
  void CreateInstanceCapNodesLocked();
  // The node state file's changes since it was last seen, if any.
  void PollNodeStateLocked();
  // Makes the machine's GPUs that have an entry in `state` match it.
  void AdoptNodeStateLocked(const NodeMigState& state);
  nvmlReturn_t ChangeMigLocked(absl::FunctionRef<nvmlReturn_t()> change);
  // Prints a node-state problem to stderr, once per distinct problem.
  void ReportNodeStateLocked(const absl::Status& problem);
  int64_t NowMsLocked() const;

  // std::mutex rather than absl::Mutex: the library links absl statically, and the archive
  // members behind absl::Mutex are not position-independent on Debian (see ../CMakeLists.txt).
  // The private methods above need mu_ held; mu_ guards every member below.
  std::mutex mu_;
  // Signalled when events are queued, event sets freed, or the library shuts down.
  std::condition_variable cv_;
  int refcount_ = 0;
  uint64_t generation_ = 0;  // counts full shutdowns
  std::unique_ptr<Machine> machine_;
  std::optional<ControlFile> control_;
  std::optional<NodeStateFile> node_state_;
  std::set<std::string> reported_;  // node-state problems printed so far (for the process)
  std::chrono::steady_clock::time_point started_;
  double time_scale_ = 1;
  int64_t advanced_ms_ = 0;
  int waiters_ = 0;
  std::string last_failure_;
  // nvidiactl and the visible GPUs' nodes, held from the first init to the last shutdown.
  std::vector<int> device_fds_;
  std::string device_nodes_dir_;  // the scenario's device_nodes; empty: none
};

}  // namespace gpuop::fakenvml

#endif  // GPUOP_TEST_FAKES_NVML_DRIVER_H_
