#include "agent/podresources/attribution.h"

#include <algorithm>
#include <optional>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace gpuop::agent::podresources {
namespace {

struct Target {
  const hw::Gpu* gpu = nullptr;
  std::optional<unsigned int> gpu_instance;  // set for MIG devices
};

bool IsAcceleratorResource(const std::string& resource, const AttributionOptions& options) {
  for (const std::string& prefix : options.resource_prefixes) {
    if (absl::StartsWith(resource, prefix)) return true;
  }
  return false;
}

// Adds `holder` to a sorted, unique list unless the list is full.
void AddHolder(std::vector<Holder>& holders, Holder holder, const AttributionOptions& options,
               int& dropped) {
  auto at = std::lower_bound(holders.begin(), holders.end(), holder);
  if (at != holders.end() && *at == holder) return;
  if (holders.size() >= options.max_holders_per_device) {
    ++dropped;
    return;
  }
  holders.insert(at, std::move(holder));
}

}  // namespace

absl::string_view PhysicalDeviceId(absl::string_view device_id) {
  const size_t separator = device_id.rfind("::");
  if (separator == absl::string_view::npos || separator + 2 == device_id.size()) return device_id;
  for (char c : device_id.substr(separator + 2)) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return device_id;
  }
  return device_id.substr(0, separator);
}

Attribution Attribute(const std::vector<const hw::Inventory*>& inventories,
                      const std::vector<PodDevice>& devices, const AttributionOptions& options) {
  absl::flat_hash_map<absl::string_view, Target> targets;
  for (const hw::Inventory* inventory : inventories) {
    if (inventory == nullptr) continue;
    for (const hw::Gpu& gpu : inventory->gpus) {
      targets[gpu.uuid] = Target{.gpu = &gpu};
      for (const hw::MigDevice& mig : gpu.mig_devices) {
        targets[mig.uuid] = Target{.gpu = &gpu, .gpu_instance = mig.gpu_instance_id};
      }
    }
  }
  Attribution result;
  for (const PodDevice& device : devices) {
    if (!IsAcceleratorResource(device.resource, options)) continue;
    auto target = targets.find(PhysicalDeviceId(device.device_id));
    if (target == targets.end()) {
      ++result.unknown_devices;
      continue;
    }
    GpuHolders& holders = result.by_gpu[target->second.gpu->uuid];
    Holder holder{
        .pod_namespace = device.pod_namespace, .pod = device.pod, .container = device.container};
    if (target->second.gpu_instance.has_value()) {
      AddHolder(holders.instances[*target->second.gpu_instance], std::move(holder), options,
                result.dropped_holders);
    } else {
      AddHolder(holders.gpu, std::move(holder), options, result.dropped_holders);
    }
  }
  return result;
}

std::vector<std::pair<Holder, double>> EnergyShares(const hw::Gpu& gpu, const GpuHolders& holders) {
  std::map<Holder, double> shares;
  if (!holders.gpu.empty()) {
    const double each = 1.0 / static_cast<double>(holders.gpu.size());
    for (const Holder& holder : holders.gpu) shares[holder] += each;
  }
  if (!holders.instances.empty()) {
    unsigned int total_slices = 0;
    for (const hw::MigProfile& profile : gpu.mig_profiles) {
      total_slices = std::max(total_slices, profile.slice_count);
    }
    std::set<unsigned int> instances;
    for (const hw::MigDevice& mig : gpu.mig_devices) instances.insert(mig.gpu_instance_id);
    for (const auto& [instance, instance_holders] : holders.instances) {
      if (instance_holders.empty()) continue;
      double share = instances.empty() ? 0 : 1.0 / static_cast<double>(instances.size());
      for (const hw::MigDevice& mig : gpu.mig_devices) {
        if (mig.gpu_instance_id != instance) continue;
        for (const hw::MigProfile& profile : gpu.mig_profiles) {
          if (profile.name == mig.profile && total_slices > 0 && profile.slice_count > 0) {
            share = static_cast<double>(profile.slice_count) / total_slices;
          }
        }
        break;
      }
      const double each = share / static_cast<double>(instance_holders.size());
      for (const Holder& holder : instance_holders) shares[holder] += each;
    }
  }
  // Whole-GPU and MIG holders on one GPU cannot both be real; never charge more than it used.
  double total = 0;
  for (const auto& [holder, share] : shares) total += share;
  if (total > 1) {
    for (auto& [holder, share] : shares) share /= total;
  }
  return {shares.begin(), shares.end()};
}

}  // namespace gpuop::agent::podresources
