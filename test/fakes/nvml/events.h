#ifndef GPUOP_TEST_FAKES_NVML_EVENTS_H_
#define GPUOP_TEST_FAKES_NVML_EVENTS_H_

// NVML event sets: which GPUs and event types each set registered, and the events queued for it.
// An event reaches every set that registered its GPU for its type at the time it happens; older
// events are never replayed. Not thread-safe (the Driver's mutex guards it).

#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "hw/nvml/nvml_abi.h"
#include "test/fakes/nvml/state.h"

struct nvmlEventSet_st {
  std::unordered_map<const gpuop::fakenvml::GpuState*, unsigned long long> registered;
  std::deque<nvmlEventData_t> queue;
};

namespace gpuop::fakenvml {

class EventHub {
 public:
  // Events a set keeps before dropping the oldest, as the driver's ring buffer does.
  static constexpr size_t kQueueLimit = 1024;

  nvmlEventSet_t Create();
  // False when `set` is not a live set.
  bool Free(nvmlEventSet_t set);
  // The live set, or nullptr.
  nvmlEventSet_st* Find(nvmlEventSet_t set) const;

  // The event types the GPU reports: XIDs, P-state and clock changes, and ECC errors when ECC is
  // enabled.
  static unsigned long long Supported(const GpuState& gpu);
  // Adds `types` for `gpu` to the set; NOT_SUPPORTED when one of them is not supported.
  nvmlReturn_t Register(const GpuState& gpu, unsigned long long types, nvmlEventSet_st& set);

  // Queues an event on every set that registered `gpu` for `type`.
  void Emit(GpuState& gpu, unsigned long long type, unsigned long long data,
            unsigned int gpu_instance, unsigned int compute_instance);
  // Takes the oldest queued event; false when there is none.
  static bool Pop(nvmlEventSet_st& set, nvmlEventData_t* out);

  // Changes whenever an event is queued or a set freed: what a waiter needs waking for.
  uint64_t version() const { return version_; }

 private:
  std::vector<std::unique_ptr<nvmlEventSet_st>> sets_;
  uint64_t version_ = 0;
};

}  // namespace gpuop::fakenvml

#endif  // GPUOP_TEST_FAKES_NVML_EVENTS_H_
