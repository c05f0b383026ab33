#ifndef GPUOP_AGENT_POWER_ENERGY_ACCOUNTANT_H_
#define GPUOP_AGENT_POWER_ENERGY_ACCOUNTANT_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "agent/power/allocation_source.h"
#include "hw/model.h"

namespace gpuop::agent::power {

// Who holds (part of) a GPU during an interval, and which share of the GPU that is.
struct EnergyHolder {
  std::string pod;   // "namespace/name"
  double share = 1;  // 1 for a whole GPU; a MIG device's slices over the GPU's
};

// The holders of each GPU (by index) from the kubelet's allocations: a whole GPU counts 1, a
// MIG device its share (DeviceShare), a time-slicing replica of a GPU counts 1 (the pods
// sharing it split it). A pod holding several devices of one GPU gets one entry with their sum.
// Devices of no known GPU are ignored.
std::map<int, std::vector<EnergyHolder>> HoldersFromAllocations(
    const hw::Inventory& inventory, const std::vector<DeviceAllocation>& allocations);

// Energy per GPU and per pod, from the GPUs' energy counters.
//
// Each Observe() closes an interval for every GPU with a reading in both this sample and the
// previous one: the energy used is the counter's increase. A counter that went down (the driver
// reloaded and restarted it from zero) counts its new value, the energy since the restart. A
// GPU without a reading (lost, not supported) closes no interval, and its next reading only
// starts a new one: energy across a gap is not guessed.
//
// An interval's energy goes to the holders given with the sample that closes it (the
// allocation seen at its end; sample at least as often as pods come and go for accuracy):
// each holder gets its share; when the shares add up to more than 1 (pods time-sharing a GPU)
// they are scaled to add up to 1; what is left goes to the GPU's idle energy (no pod held that
// part of it).
//
// Totals are joules since the accountant was created; they only grow, which is what a
// Prometheus counter needs.
//
// Pure bookkeeping: no I/O, no clock, not thread-safe (one owner).
class EnergyAccountant {
 public:
  void Observe(const hw::Sample& sample, const std::map<int, std::vector<EnergyHolder>>& holders);

  double GpuJoules(int gpu_index) const;   // all energy of the GPU
  double IdleJoules(int gpu_index) const;  // the part no pod held
  double PodJoules(const std::string& pod) const;
  const std::map<std::string, double>& PodTotals() const { return pods_; }
  // Drops a pod that is gone, so the map does not grow without bound. Its energy stays in the
  // GPU totals.
  void ForgetPod(const std::string& pod);

 private:
  struct Gpu {
    std::optional<double> last_counter;
    double total = 0;
    double idle = 0;
  };
  std::map<int, Gpu> gpus_;
  std::map<std::string, double> pods_;
};

}  // namespace gpuop::agent::power

#endif  // GPUOP_AGENT_POWER_ENERGY_ACCOUNTANT_H_
