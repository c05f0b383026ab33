#include "test/fakes/nvml/events.h"

#include <algorithm>

namespace gpuop::fakenvml {

nvmlEventSet_t EventHub::Create() {
  sets_.push_back(std::make_unique<nvmlEventSet_st>());
  return sets_.back().get();
}

bool EventHub::Free(nvmlEventSet_t set) {
  const auto it =
      std::find_if(sets_.begin(), sets_.end(), [&](const auto& live) { return live.get() == set; });
  if (it == sets_.end()) return false;
  sets_.erase(it);
  ++version_;
  return true;
}

nvmlEventSet_st* EventHub::Find(nvmlEventSet_t set) const {
  for (const auto& live : sets_) {
    if (live.get() == set) return live.get();
  }
  return nullptr;
}

unsigned long long EventHub::Supported(const GpuState& gpu) {
  constexpr unsigned long long kPState = 0x4;
  constexpr unsigned long long kClock = 0x10;
  // nvml.h's nvmlEventTypeGpuUnavailableError ("the GPU is unavailable"): the simulated
  // driver is a current one, which reports it for every GPU.
  unsigned long long types =
      nvmlEventTypeXidCriticalError | kPState | kClock | nvmlEventTypeGpuUnavailableError;
  if (gpu.spec.ecc_enabled) {
    types |= nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError;
  }
  return types;
}

nvmlReturn_t EventHub::Register(const GpuState& gpu, unsigned long long types,
                                nvmlEventSet_st& set) {
  if ((types & ~Supported(gpu)) != 0) return NVML_ERROR_NOT_SUPPORTED;
  set.registered[&gpu] |= types;
  return NVML_SUCCESS;
}

void EventHub::Emit(GpuState& gpu, unsigned long long type, unsigned long long data,
                    unsigned int gpu_instance, unsigned int compute_instance) {
  for (const auto& set : sets_) {
    const auto it = set->registered.find(&gpu);
    if (it == set->registered.end() || (it->second & type) == 0) continue;
    if (set->queue.size() >= kQueueLimit) set->queue.pop_front();
    set->queue.push_back(nvmlEventData_t{&gpu.handle, type, data, gpu_instance, compute_instance});
    ++version_;
  }
}

bool EventHub::Pop(nvmlEventSet_st& set, nvmlEventData_t* out) {
  if (set.queue.empty()) return false;
  *out = set.queue.front();
  set.queue.pop_front();
  return true;
}

}  // namespace gpuop::fakenvml
