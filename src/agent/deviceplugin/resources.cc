#include "agent/deviceplugin/resources.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "agent/cdi/kinds.h"

namespace gpuop::agent {
namespace {

PluginDevice WholeGpu(const hw::Gpu& gpu) {
  const bool amd = gpu.vendor == hw::Vendor::kAmd;
  const std::string id = amd ? gpu.pci_bus_id : gpu.uuid;
  return {.id = id,
          .physical_id = id,
          .vendor = gpu.vendor,
          .gpu_index = gpu.index,
          .gpu_id = id,
          .numa_node = gpu.numa_node,
          .cdi_name = absl::StrCat(amd ? "amd.com/gpu" : cdi::kNvidiaCdiKind, "=", id),
          .device_nodes = gpu.device_nodes};
}

PluginDevice MigDevice(const hw::Gpu& gpu, const hw::MigDevice& mig) {
  return {.id = mig.uuid,
          .physical_id = mig.uuid,
          .vendor = gpu.vendor,
          .gpu_index = gpu.index,
          .gpu_id = gpu.uuid,
          .mig = true,
          .gpu_instance_id = mig.gpu_instance_id,
          .numa_node = gpu.numa_node,
          .cdi_name = absl::StrCat(cdi::kNvidiaCdiKind, "=", mig.uuid)};
}

// Whether `selector` (a GPU index, GPU UUID, MIG UUID or PCI address) names `device`.
std::string Describe(const hw::Gpu& gpu) {
  return absl::StrCat("GPU ", gpu.index, " (", gpu.uuid, ")");
}

bool Selects(const std::string& selector, const PluginDevice& device, const hw::Gpu& gpu) {
  return selector == device.physical_id || selector == gpu.uuid ||
         selector == std::to_string(gpu.index) || selector == gpu.pci_bus_id;
}

}  // namespace

std::string MigResourceName(const std::string& profile) {
  return absl::StrCat("nvidia.com/mig-", absl::StrReplaceAll(profile, {{"+", "."}}));
}

int ResourcePlan::Replicas(const std::string& resource) const {
  auto it = resources.find(resource);
  if (it == resources.end()) return 1;
  int replicas = 1;
  for (const auto& d : it->second) replicas = std::max(replicas, d.replicas);
  return replicas;
}

MigSingleLayout ClassifyMigSingle(const std::vector<hw::Gpu>& gpus) {
  MigSingleLayout out;
  std::vector<const hw::Gpu*> enabled, disabled;
  for (const hw::Gpu& gpu : gpus) {
    if (gpu.vendor != hw::Vendor::kNvidia) continue;
    (gpu.mig_enabled ? enabled : disabled).push_back(&gpu);
  }
  if (enabled.empty()) return out;
  out.first_mig_gpu = enabled.front();
  out.kind = MigSingleLayout::Kind::kInvalid;
  for (const hw::Gpu* gpu : enabled) {
    if (gpu->mig_devices.empty()) {
      out.reason = absl::StrCat(Describe(*gpu), " has MIG enabled but no MIG devices");
      return out;
    }
  }
  if (!disabled.empty()) {
    auto indexes = [](const std::vector<const hw::Gpu*>& list) {
      return absl::StrJoin(list, ", ",
                           [](std::string* s, const hw::Gpu* g) { absl::StrAppend(s, g->index); });
    };
    out.reason = absl::StrCat("GPUs with MIG enabled (", indexes(enabled),
                              ") and with MIG disabled (", indexes(disabled), ") on one node");
    return out;
  }
  std::set<std::string> profiles;
  for (const hw::Gpu* gpu : enabled) {
    for (const hw::MigDevice& mig : gpu->mig_devices) profiles.insert(mig.profile);
  }
  if (profiles.size() > 1) {
    out.reason =
        absl::StrCat("MIG devices of more than one profile (", absl::StrJoin(profiles, ", "), ")");
    return out;
  }
  out.kind = MigSingleLayout::Kind::kMigDevices;
  out.profile = *profiles.begin();
  return out;
}

absl::StatusOr<ResourcePlan> PlanResources(const std::vector<hw::Gpu>& gpus,
                                           const DevicePluginConfig& config) {
  ResourcePlan plan;
  const MigSingleLayout single =
      config.mig_strategy == MigStrategy::kSingle ? ClassifyMigSingle(gpus) : MigSingleLayout{};
  if (single.kind == MigSingleLayout::Kind::kInvalid) {
    plan.mig_invalid = single.reason;
    plan.warnings.push_back(absl::StrCat("MIG strategy single: ", single.reason,
                                         "; nvidia.com/gpu is advertised with no devices until "
                                         "the layout is fixed (or use strategy mixed)"));
    plan.resources["nvidia.com/gpu"];
  }
  for (const hw::Gpu& gpu : gpus) {
    if (gpu.vendor == hw::Vendor::kAmd) {
      plan.resources["amd.com/gpu"].push_back(WholeGpu(gpu));
      continue;
    }
    if (gpu.vendor != hw::Vendor::kNvidia) continue;
    switch (config.mig_strategy) {
      case MigStrategy::kNone:
        plan.resources["nvidia.com/gpu"].push_back(WholeGpu(gpu));
        break;
      case MigStrategy::kSingle:
        if (single.kind == MigSingleLayout::Kind::kWholeGpus) {
          plan.resources["nvidia.com/gpu"].push_back(WholeGpu(gpu));
        } else if (single.kind == MigSingleLayout::Kind::kMigDevices) {
          for (const auto& mig : gpu.mig_devices) {
            plan.resources["nvidia.com/gpu"].push_back(MigDevice(gpu, mig));
          }
        }
        break;
      case MigStrategy::kMixed:
        if (!gpu.mig_enabled) {
          plan.resources["nvidia.com/gpu"].push_back(WholeGpu(gpu));
        } else if (gpu.mig_devices.empty()) {
          plan.warnings.push_back(absl::StrCat(Describe(gpu),
                                               " has MIG enabled but no MIG devices; it offers "
                                               "nothing until MIG devices are created"));
        } else {
          for (const auto& mig : gpu.mig_devices) {
            plan.resources[MigResourceName(mig.profile)].push_back(MigDevice(gpu, mig));
          }
        }
        break;
    }
  }

  // Time-slicing: replicate the selected devices of each rule's resource.
  for (size_t r = 0; r < config.time_slicing.size(); ++r) {
    const TimeSlicingRule& rule = config.time_slicing[r];
    auto it = plan.resources.find(rule.resource);
    if (it != plan.resources.end() && it->second.empty()) continue;  // nothing to replicate
    if (it == plan.resources.end()) {
      plan.warnings.push_back(
          absl::StrCat("time-slicing rule ", r, ": the node has no ", rule.resource));
      continue;
    }
    auto gpu_of = [&](const PluginDevice& d) -> const hw::Gpu& {
      for (const hw::Gpu& g : gpus) {
        if (g.index == d.gpu_index && g.vendor == d.vendor) return g;
      }
      return gpus.front();  // Not reached: every device comes from `gpus`.
    };
    for (const std::string& selector : rule.devices) {
      bool found = false;
      for (const auto& d : it->second) found = found || Selects(selector, d, gpu_of(d));
      if (!found) {
        return absl::InvalidArgumentError(absl::StrCat("sharing.timeSlicing.resources[", r,
                                                       "].devices: \"", selector, "\" is not a ",
                                                       rule.resource, " device on this node"));
      }
    }
    const bool rename = rule.rename.value_or(config.rename_by_default);
    const std::string target = rename ? rule.resource + ".shared" : rule.resource;
    std::vector<PluginDevice> kept, shared;
    for (const PluginDevice& d : it->second) {
      bool selected = rule.devices.empty();
      for (const auto& s : rule.devices) selected = selected || Selects(s, d, gpu_of(d));
      if (!selected || rule.replicas == 1) {
        kept.push_back(d);
        continue;
      }
      for (int n = 0; n < rule.replicas; ++n) {
        PluginDevice replica = d;
        replica.id = absl::StrCat(d.physical_id, "::", n);
        replica.replica = n;
        replica.replicas = rule.replicas;
        shared.push_back(std::move(replica));
      }
    }
    if (target == rule.resource) {
      kept.insert(kept.end(), shared.begin(), shared.end());
      it->second = std::move(kept);
    } else {
      it->second = std::move(kept);
      auto& renamed = plan.resources[target];
      renamed.insert(renamed.end(), shared.begin(), shared.end());
      if (it->second.empty()) plan.resources.erase(it);
    }
  }
  return plan;
}

}  // namespace gpuop::agent
