#ifndef GPUOP_TEST_FAKES_NVML_DRIVER_H_
#define GPUOP_TEST_FAKES_NVML_DRIVER_H_

// The process-wide state of the fake library: the reference-counted init, the running Machine,
// the scenario clock and the control file, all behind one mutex. Every NVML export goes through
// Driver::Get(). Configuration comes from the environment, read when the first nvmlInit_v2 (after
// a full shutdown) loads the scenario:
//   GPUOP_FAKE_NVML_SCENARIO    a preset name (scenarios/<name>.yaml next to the library) or a
//                               path to a scenario file (contains '/' or ends in .yaml/.yml)
//   GPUOP_FAKE_NVML_CONTROL     a control file to follow (control.h)
//   GPUOP_FAKE_NVML_TIME_SCALE  scenario seconds per real second (default 1; 0 freezes the
//                               clock so that only "advance" moves it)
//   GPUOP_FAKE_NVML_NODE        mixed into derived UUIDs and serials (e.g. the node name)

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "hw/nvml/nvml_abi.h"
#include "test/fakes/nvml/control.h"
#include "test/fakes/nvml/machine.h"

namespace gpuop::fakenvml {

class Driver {
 public:
  static Driver& Get();

  // Reference-counted. The first call loads the scenario; on failure returns DRIVER_NOT_LOADED and
  // prints why to stderr (once per distinct reason).
  nvmlReturn_t Init();
  // UNINITIALIZED without a matching Init; the last one discards the machine and its handles.
  nvmlReturn_t Shutdown();

  // Runs fn(Machine&) -> nvmlReturn_t under the lock, after bringing the scenario clock and the
  // control file up to date. UNINITIALIZED when the library is not initialised.
  template <typename Fn>
  nvmlReturn_t Run(Fn&& fn) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (machine_ == nullptr) return NVML_ERROR_UNINITIALIZED;
    const uint64_t version = machine_->events().version();
    SyncLocked();
    const nvmlReturn_t result = fn(*machine_);
    if (waiters_ > 0 && machine_->events().version() != version) cv_.SignalAll();
    return result;
  }

  // nvmlEventSetWait_v2: blocks up to `timeout_ms` for an event on `set`, releasing the lock while
  // it waits; TIMEOUT when none arrives.
  nvmlReturn_t WaitEvent(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeout_ms)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  Driver() = default;

  absl::StatusOr<std::unique_ptr<Machine>> Load() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Applies control-file lines and due timeline entries.
  void SyncLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int64_t NowMsLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  // Signalled when events are queued, event sets freed, or the library shuts down.
  absl::CondVar cv_;
  int refcount_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;  // counts full shutdowns
  std::unique_ptr<Machine> machine_ ABSL_GUARDED_BY(mu_);
  std::optional<ControlFile> control_ ABSL_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point started_ ABSL_GUARDED_BY(mu_);
  double time_scale_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t advanced_ms_ ABSL_GUARDED_BY(mu_) = 0;
  int waiters_ ABSL_GUARDED_BY(mu_) = 0;
  std::string last_failure_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpuop::fakenvml

#endif  // GPUOP_TEST_FAKES_NVML_DRIVER_H_
