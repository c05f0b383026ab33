#include "agent/power/energy_accountant.h"

#include <algorithm>

namespace gpuop::agent::power {

std::map<int, std::vector<EnergyHolder>> HoldersFromAllocations(
    const hw::Inventory& inventory, const std::vector<DeviceAllocation>& allocations) {
  std::map<int, std::map<std::string, double>> by_gpu;
  for (const DeviceAllocation& a : allocations) {
    const std::optional<int> gpu = GpuOfDevice(inventory, a.device_id);
    if (!gpu.has_value()) continue;
    by_gpu[*gpu][a.pod()] += DeviceShare(inventory, a.device_id);
  }
  std::map<int, std::vector<EnergyHolder>> holders;
  for (const auto& [gpu, pods] : by_gpu) {
    for (const auto& [pod, share] : pods) holders[gpu].push_back({pod, share});
  }
  return holders;
}

void EnergyAccountant::Observe(const hw::Sample& sample,
                               const std::map<int, std::vector<EnergyHolder>>& holders) {
  for (const hw::GpuSample& reading : sample.gpus) {
    Gpu& gpu = gpus_[reading.index];
    if (reading.lost || !reading.energy_joules.has_value()) {
      gpu.last_counter.reset();
      continue;
    }
    const double counter = *reading.energy_joules;
    const std::optional<double> last = gpu.last_counter;
    gpu.last_counter = counter;
    if (!last.has_value()) continue;
    const double used = counter >= *last ? counter - *last : counter;
    if (used <= 0) continue;
    gpu.total += used;

    const auto it = holders.find(reading.index);
    double shares = 0;
    if (it != holders.end()) {
      for (const EnergyHolder& h : it->second) shares += std::max(0.0, h.share);
    }
    const double scale = shares > 1 ? 1 / shares : 1;
    double attributed = 0;
    if (it != holders.end()) {
      for (const EnergyHolder& h : it->second) {
        const double joules = used * std::max(0.0, h.share) * scale;
        pods_[h.pod] += joules;
        attributed += joules;
      }
    }
    gpu.idle += std::max(0.0, used - attributed);
  }
}

double EnergyAccountant::GpuJoules(int gpu_index) const {
  const auto it = gpus_.find(gpu_index);
  return it == gpus_.end() ? 0 : it->second.total;
}

double EnergyAccountant::IdleJoules(int gpu_index) const {
  const auto it = gpus_.find(gpu_index);
  return it == gpus_.end() ? 0 : it->second.idle;
}

double EnergyAccountant::PodJoules(const std::string& pod) const {
  const auto it = pods_.find(pod);
  return it == pods_.end() ? 0 : it->second;
}

void EnergyAccountant::ForgetPod(const std::string& pod) { pods_.erase(pod); }

}  // namespace gpuop::agent::power
