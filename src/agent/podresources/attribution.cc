#include "agent/podresources/attribution.h"

#include <algorithm>
#include <optional>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

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

bool IsDraGpuDriver(const std::string& driver, const AttributionOptions& options) {
  return std::find(options.dra_gpu_drivers.begin(), options.dra_gpu_drivers.end(), driver) !=
         options.dra_gpu_drivers.end();
}

bool Number(absl::string_view text, unsigned int& out) {
  return !text.empty() && absl::SimpleAtoi(text, &out);
}

// A DRA device name of NVIDIA's driver (see Attribute) mapped onto `inventories`; no GPU when
// the name does not parse or names no GPU there.
Target DraTarget(const std::vector<const hw::Inventory*>& inventories, absl::string_view name) {
  if (!absl::ConsumePrefix(&name, "gpu-")) return {};
  const std::vector<absl::string_view> parts = absl::StrSplit(name, absl::MaxSplits("-mig-", 1));
  unsigned int minor = 0;
  if (!Number(parts[0], minor)) return {};
  Target target;
  for (const hw::Inventory* inventory : inventories) {
    if (inventory == nullptr) continue;
    for (const hw::Gpu& gpu : inventory->gpus) {
      if (gpu.minor_number.value_or(static_cast<unsigned int>(gpu.index)) == minor) {
        target.gpu = &gpu;
      }
    }
  }
  if (target.gpu == nullptr || parts.size() == 1) return target;
  const std::vector<absl::string_view> fields = absl::StrSplit(parts[1], '-');
  unsigned int a = 0, b = 0, c = 0;
  std::optional<unsigned int> start;
  if (fields.size() == 3 && Number(fields[0], a) && Number(fields[1], b) && Number(fields[2], c)) {
    start = b;  // <profile id>-<start>-<size>
  } else if (fields.size() == 3 && Number(fields[1], b) && Number(fields[2], c)) {
    start = c;  // <profile>-<profile id>-<start>
  }
  if (!start.has_value()) return target;
  for (const hw::MigDevice& mig : target.gpu->mig_devices) {
    if (mig.placement_start == *start) target.gpu_instance = mig.gpu_instance_id;
  }
  return target;
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
    Target found;
    if (device.dra.has_value()) {
      if (!IsDraGpuDriver(device.dra->driver, options)) continue;
      found = DraTarget(inventories, device.dra->device);
    } else {
      if (!IsAcceleratorResource(device.resource, options)) continue;
      if (auto target = targets.find(PhysicalDeviceId(device.device_id)); target != targets.end()) {
        found = target->second;
      }
    }
    if (found.gpu == nullptr) {
      ++result.unknown_devices;
      continue;
    }
    GpuHolders& holders = result.by_gpu[found.gpu->uuid];
    Holder holder{.pod_namespace = device.pod_namespace,
                  .pod = device.pod,
                  .container = device.container,
                  .dra = device.dra};
    if (found.gpu_instance.has_value()) {
      AddHolder(holders.instances[*found.gpu_instance], std::move(holder), options,
                result.dropped_holders);
    } else {
      AddHolder(holders.gpu, std::move(holder), options, result.dropped_holders);
    }
  }
  return result;
}

std::vector<std::pair<Holder, double>> EnergyShares(const hw::Gpu& gpu, const GpuHolders& holders) {
  std::map<Holder, double> shares;
  // Energy is the container's, whichever claim gave it the device.
  auto container = [](const Holder& holder) {
    return Holder{
        .pod_namespace = holder.pod_namespace, .pod = holder.pod, .container = holder.container};
  };
  if (!holders.gpu.empty()) {
    const double each = 1.0 / static_cast<double>(holders.gpu.size());
    for (const Holder& holder : holders.gpu) shares[container(holder)] += each;
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
      for (const Holder& holder : instance_holders) shares[container(holder)] += each;
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
