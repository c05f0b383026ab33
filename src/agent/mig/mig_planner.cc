#include "agent/mig/mig_planner.h"

#include <algorithm>
#include <cstdlib>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hw/mig_profile.h"

namespace gpuop::agent::mig {
namespace {

// The GPU-instance profile a MIG device profile ("3g.20gb", or "1c.3g.20gb" for a smaller
// compute instance) lives in; nullptr when the GPU does not offer it.
const hw::MigProfile* FindProfile(const hw::Gpu& gpu, const std::string& name) {
  const std::string gpu_instance = hw::ParseMigProfileName(name).gpu_instance;
  for (const hw::MigProfile& p : gpu.mig_profiles) {
    if (p.name == gpu_instance) return &p;
  }
  return nullptr;
}

// `counts` with "<c>c.<profile>" written "<profile>" where c slices fill the GPU instance, as
// NVIDIA names such a MIG device (mig-parted normalises the same way).
std::map<std::string, int> Normalized(const hw::Gpu& gpu,
                                      const std::map<std::string, int>& counts) {
  std::map<std::string, int> out;
  for (const auto& [name, count] : counts) {
    const hw::MigProfileName parsed = hw::ParseMigProfileName(name);
    const hw::MigProfile* profile = FindProfile(gpu, name);
    const bool whole = parsed.compute_slices.has_value() && profile != nullptr &&
                       *parsed.compute_slices == profile->slice_count;
    out[whole ? parsed.gpu_instance : name] += count;
  }
  return out;
}

// GPU instance id -> (the profile of its MIG devices, compute instances).
std::map<unsigned int, std::pair<std::string, int>> GpuInstances(const hw::Gpu& gpu) {
  std::map<unsigned int, std::pair<std::string, int>> instances;
  for (const hw::MigDevice& d : gpu.mig_devices) {
    auto& [profile, computes] = instances[d.gpu_instance_id];
    profile = hw::MigDeviceProfile(d);
    ++computes;
  }
  return instances;
}

std::vector<unsigned int> AllGpuInstances(const hw::Gpu& gpu) {
  std::vector<unsigned int> ids;
  for (const auto& [id, instance] : GpuInstances(gpu)) ids.push_back(id);
  return ids;
}

constexpr uint64_t kMiB = 1024 * 1024;

}  // namespace

bool LayoutPlan::in_place() const {
  return std::all_of(gpus.begin(), gpus.end(), [](const GpuPlan& p) { return p.in_place(); });
}

std::vector<int> LayoutPlan::changing_gpus() const {
  std::vector<int> indexes;
  for (const GpuPlan& p : gpus) {
    if (!p.in_place()) indexes.push_back(p.gpu_index);
  }
  return indexes;
}

std::string DescribeGpu(const hw::Gpu& gpu) {
  return gpu.product.empty() ? absl::StrCat("GPU ", gpu.index)
                             : absl::StrCat("GPU ", gpu.index, " (", gpu.product, ")");
}

GpuLayout CurrentLayout(const hw::Gpu& gpu) {
  GpuLayout layout{.mig_enabled = gpu.mig_enabled};
  if (!gpu.mig_enabled) return layout;
  for (const auto& [id, instance] : GpuInstances(gpu)) {
    ++layout.mig_devices[instance.first.empty() ? "unknown" : instance.first];
  }
  return layout;
}

bool InPlace(const hw::Gpu& gpu, const GpuLayout& desired) {
  if (gpu.mig_pending_change) return false;
  if (!desired.mig_enabled) return !gpu.mig_enabled;
  if (!gpu.mig_enabled) return false;
  for (const auto& [id, instance] : GpuInstances(gpu)) {
    if (instance.second != 1) return false;
  }
  return CurrentLayout(gpu).mig_devices == Normalized(gpu, desired.mig_devices);
}

absl::Status CheckFits(const hw::Gpu& gpu, const std::map<std::string, int>& counts) {
  unsigned int gpu_slices = 0;
  uint64_t gpu_memory = 0;
  for (const hw::MigProfile& p : gpu.mig_profiles) {
    gpu_slices = std::max(gpu_slices, p.slice_count);
    gpu_memory = std::max(gpu_memory, p.memory_bytes);
  }
  const GpuLayout wanted{.mig_enabled = true, .mig_devices = counts};
  unsigned int slices = 0;
  uint64_t memory = 0;
  for (const auto& [name, count] : counts) {
    const hw::MigProfile* profile = FindProfile(gpu, name);
    if (profile == nullptr) {
      std::vector<std::string> offered;
      for (const hw::MigProfile& p : gpu.mig_profiles) offered.push_back(p.name);
      return absl::InvalidArgumentError(
          absl::StrCat(DescribeGpu(gpu), ": MIG profile \"", name, "\" is not offered (offered: ",
                       offered.empty() ? "none" : absl::StrJoin(offered, ", "), ")"));
    }
    if (const std::optional<unsigned int> compute = hw::ParseMigProfileName(name).compute_slices;
        compute.has_value() && *compute > profile->slice_count) {
      return absl::InvalidArgumentError(
          absl::StrCat(DescribeGpu(gpu), ": MIG profile \"", name, "\": a compute instance of ",
                       *compute, " slices does not fit a GPU instance of ", profile->slice_count));
    }
    if (static_cast<unsigned int>(count) > profile->instance_count) {
      return absl::InvalidArgumentError(absl::StrCat(DescribeGpu(gpu), ": ", count, "x", name,
                                                     " does not fit: at most ",
                                                     profile->instance_count, " fit"));
    }
    slices += profile->slice_count * static_cast<unsigned int>(count);
    memory += profile->memory_bytes * static_cast<uint64_t>(count);
  }
  if (slices > gpu_slices) {
    return absl::InvalidArgumentError(absl::StrCat(DescribeGpu(gpu), ": ", DescribeLayout(wanted),
                                                   " does not fit: it needs ", slices,
                                                   " compute slices and the GPU has ", gpu_slices));
  }
  if (memory > gpu_memory) {
    return absl::InvalidArgumentError(absl::StrCat(
        DescribeGpu(gpu), ": ", DescribeLayout(wanted), " does not fit: it needs ", memory / kMiB,
        " MiB of memory and the GPU's MIG memory is ", gpu_memory / kMiB, " MiB"));
  }
  return absl::OkStatus();
}

std::vector<std::string> CreationOrder(const hw::Gpu& gpu,
                                       const std::map<std::string, int>& counts) {
  struct Key {
    unsigned int slices;
    uint64_t memory;
    std::string name;
  };
  std::vector<Key> keys;
  for (const auto& [name, count] : counts) {
    const hw::MigProfile* p = FindProfile(gpu, name);
    const std::string gpu_instance = hw::ParseMigProfileName(name).gpu_instance;
    keys.push_back(
        {p != nullptr ? p->slice_count : static_cast<unsigned int>(std::atoi(gpu_instance.c_str())),
         p != nullptr ? p->memory_bytes : 0, name});
  }
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    if (a.slices != b.slices) return a.slices > b.slices;
    if (a.memory != b.memory) return a.memory > b.memory;
    return a.name < b.name;
  });
  std::vector<std::string> order;
  for (const Key& k : keys)
    order.insert(order.end(), static_cast<size_t>(counts.at(k.name)), k.name);
  return order;
}

absl::StatusOr<GpuPlan> PlanGpu(const hw::Gpu& gpu, const GpuLayout& layout,
                                PlanStrategy strategy) {
  GpuLayout desired = layout;
  desired.mig_devices = Normalized(gpu, layout.mig_devices);
  GpuPlan plan{.gpu_index = gpu.index, .gpu = DescribeGpu(gpu), .desired = desired};
  if (!desired.mig_enabled) {
    if (!gpu.mig_capable) return plan;
    if (gpu.mig_enabled) plan.destroy = AllGpuInstances(gpu);
    if (gpu.mig_enabled || gpu.mig_pending_change) plan.set_mig_mode = false;
    return plan;
  }
  if (!gpu.mig_capable) {
    return absl::InvalidArgumentError(
        absl::StrCat(plan.gpu, ": the layout enables MIG, but the GPU is not MIG-capable"));
  }
  if (!gpu.mig_enabled) {
    plan.set_mig_mode = true;
    plan.replan_after_mode_change = true;
    plan.create = CreationOrder(gpu, desired.mig_devices);
    return plan;
  }
  if (gpu.mig_pending_change) plan.set_mig_mode = true;  // cancels a pending disable
  if (absl::Status fits = CheckFits(gpu, desired.mig_devices); !fits.ok()) return fits;

  std::map<std::string, int> missing = desired.mig_devices;
  for (const auto& [id, instance] : GpuInstances(gpu)) {
    const auto& [profile, computes] = instance;
    auto want = missing.find(profile);
    const bool keep = strategy == PlanStrategy::kKeepMatching && computes == 1 &&
                      want != missing.end() && want->second > 0;
    if (keep) {
      --want->second;
    } else {
      plan.destroy.push_back(id);
    }
  }
  std::erase_if(missing, [](const auto& item) { return item.second == 0; });
  plan.create = CreationOrder(gpu, missing);
  return plan;
}

absl::StatusOr<LayoutPlan> PlanLayout(const hw::Inventory& inventory,
                                      const DesiredLayout& desired) {
  LayoutPlan plan;
  std::vector<std::string> errors;
  for (const auto& [index, layout] : desired) {
    const auto gpu = std::find_if(inventory.gpus.begin(), inventory.gpus.end(),
                                  [&](const hw::Gpu& g) { return g.index == index; });
    if (gpu == inventory.gpus.end()) {
      return absl::NotFoundError(absl::StrCat("GPU ", index, " is not in the inventory"));
    }
    absl::StatusOr<GpuPlan> gpu_plan = PlanGpu(*gpu, layout);
    if (!gpu_plan.ok()) {
      errors.emplace_back(gpu_plan.status().message());
      continue;
    }
    plan.gpus.push_back(*std::move(gpu_plan));
  }
  if (!errors.empty()) return absl::InvalidArgumentError(absl::StrJoin(errors, "; "));
  return plan;
}

}  // namespace gpuop::agent::mig
