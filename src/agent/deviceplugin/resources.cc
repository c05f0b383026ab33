#include "agent/deviceplugin/resources.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "agent/cdi/kinds.h"
#include "common/status_macros.h"
#include "hw/mig_profile.h"

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
          .index_name = std::to_string(gpu.index),
          .numa_node = gpu.numa_node,
          .cdi_name = absl::StrCat(amd ? "amd.com/gpu" : cdi::kNvidiaCdiKind, "=", id),
          .device_nodes = gpu.device_nodes};
}

PluginDevice MigDevice(const hw::Gpu& gpu, size_t mig_index) {
  const hw::MigDevice& mig = gpu.mig_devices[mig_index];
  return {.id = mig.uuid,
          .physical_id = mig.uuid,
          .vendor = gpu.vendor,
          .gpu_index = gpu.index,
          .gpu_id = gpu.uuid,
          .index_name = absl::StrCat(gpu.index, ":", mig_index),
          .mig = true,
          .gpu_instance_id = mig.gpu_instance_id,
          .numa_node = gpu.numa_node,
          .cdi_name = absl::StrCat(cdi::kNvidiaCdiKind, "=", mig.uuid)};
}

std::string Describe(const hw::Gpu& gpu) {
  return absl::StrCat("GPU ", gpu.index, " (", gpu.uuid, ")");
}

// Whether `selector` (a GPU index, MIG index, GPU UUID, MIG UUID or PCI address) names `device`.
bool Selects(const std::string& selector, const PluginDevice& device, const hw::Gpu& gpu) {
  if (device.mig && selector == device.index_name) return true;
  return selector == device.physical_id || selector == gpu.uuid ||
         selector == std::to_string(gpu.index) || selector == gpu.pci_bus_id;
}

// The resource a device is advertised as before sharing: the default name, or the first
// resources.gpus / resources.mig pattern matching it (nullopt when patterns are set and none
// matches).
std::optional<std::string> NameFor(const std::vector<ResourcePattern>& patterns,
                                   const std::string& subject, std::string default_name) {
  if (patterns.empty()) return default_name;
  for (const ResourcePattern& p : patterns) {
    if (PatternMatches(p.pattern, subject)) return p.name;
  }
  return std::nullopt;
}

class Planner {
 public:
  Planner(const std::vector<hw::Gpu>& gpus, const DevicePluginConfig& config)
      : gpus_(gpus), config_(config) {}

  absl::StatusOr<ResourcePlan> Plan() {
    const MigSingleLayout single =
        config_.mig_strategy == MigStrategy::kSingle ? ClassifyMigSingle(gpus_) : MigSingleLayout{};
    if (single.kind == MigSingleLayout::Kind::kInvalid) {
      plan_.mig_invalid = single.reason;
      plan_.warnings.push_back(absl::StrCat("MIG strategy single: ", single.reason,
                                            "; nvidia.com/gpu is advertised with no devices "
                                            "until the layout is fixed (or use strategy mixed)"));
      plan_.resources["nvidia.com/gpu"];
    }
    for (const hw::Gpu& gpu : gpus_) {
      if (gpu.vendor == hw::Vendor::kAmd) {
        plan_.resources["amd.com/gpu"].push_back(WholeGpu(gpu));
      } else if (gpu.vendor == hw::Vendor::kNvidia) {
        AddNvidia(gpu, single);
      }
    }
    for (size_t r = 0; r < config_.sharing.size(); ++r) GPUOP_RETURN_IF_ERROR(Share(r));
    return std::move(plan_);
  }

 private:
  void AddGpu(const hw::Gpu& gpu) {
    const std::optional<std::string> name =
        NameFor(config_.gpu_resources, gpu.product, "nvidia.com/gpu");
    if (!name.has_value()) {
      plan_.warnings.push_back(absl::StrCat(Describe(gpu), " (", gpu.product,
                                            ") matches no resources.gpus pattern; not advertised"));
      return;
    }
    plan_.resources[*name].push_back(WholeGpu(gpu));
  }

  void AddNvidia(const hw::Gpu& gpu, const MigSingleLayout& single) {
    switch (config_.mig_strategy) {
      case MigStrategy::kNone:
        AddGpu(gpu);
        return;
      case MigStrategy::kSingle:
        if (single.kind == MigSingleLayout::Kind::kWholeGpus) {
          AddGpu(gpu);
        } else if (single.kind == MigSingleLayout::Kind::kMigDevices) {
          for (size_t m = 0; m < gpu.mig_devices.size(); ++m) {
            plan_.resources["nvidia.com/gpu"].push_back(MigDevice(gpu, m));
          }
        }
        return;
      case MigStrategy::kMixed:
        if (!gpu.mig_enabled) {
          AddGpu(gpu);
        } else if (gpu.mig_devices.empty()) {
          plan_.warnings.push_back(absl::StrCat(Describe(gpu),
                                                " has MIG enabled but no MIG devices; it offers "
                                                "nothing until MIG devices are created"));
        } else if (!gpu.mig_unreadable.empty()) {
          plan_.warnings.push_back(absl::StrCat(Describe(gpu), "'s MIG devices cannot be read (",
                                                gpu.mig_unreadable, "); none is advertised"));
          return;
        }
        for (size_t m = 0; m < gpu.mig_devices.size(); ++m) {
          const std::string profile = hw::MigDeviceProfile(gpu.mig_devices[m]);
          const std::optional<std::string> name =
              NameFor(config_.mig_resources, profile, MigResourceName(profile));
          if (!name.has_value()) {
            plan_.warnings.push_back(absl::StrCat("MIG device ", gpu.index, ":", m, " (", profile,
                                                  ") matches no resources.mig pattern; not "
                                                  "advertised"));
            continue;
          }
          plan_.resources[*name].push_back(MigDevice(gpu, m));
        }
        return;
    }
  }

  const hw::Gpu& GpuOf(const PluginDevice& d) const {
    for (const hw::Gpu& g : gpus_) {
      if (g.index == d.gpu_index && g.vendor == d.vendor) return g;
    }
    return gpus_.front();  // Not reached: every device comes from `gpus_`.
  }

  bool Selected(const SharingRule& rule, const std::vector<std::string>& order,
                const PluginDevice& d) const {
    const ReplicatedDevices& sel = rule.devices;
    if (sel.all) return true;
    if (sel.count > 0) {
      // The first `count` devices of the resource, in the plan's (GPU index) order.
      const auto end = order.begin() + std::min<size_t>(sel.count, order.size());
      return std::find(order.begin(), end, d.physical_id) != end;
    }
    return std::any_of(sel.list.begin(), sel.list.end(),
                       [&](const std::string& s) { return Selects(s, d, GpuOf(d)); });
  }

  // What NVIDIA's MPS daemon refuses: MIG devices, and more replicas than the GPU's MPS server
  // takes clients.
  absl::Status CheckMps(const std::string& field, const SharingRule& rule,
                        const PluginDevice& d) const {
    if (d.mig) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ": MPS sharing is not supported for MIG devices (", d.physical_id, ")"));
    }
    const hw::Gpu& gpu = GpuOf(d);
    const int most = MpsMaxClients(gpu.compute_major, gpu.compute_minor);
    if (rule.replicas > most) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".replicas: ", rule.replicas, " is more than the ", most,
                       " clients the MPS server of GPU ", gpu.index, " (compute capability ",
                       gpu.compute_major, ".", gpu.compute_minor, ") takes"));
    }
    return absl::OkStatus();
  }

  // Replicates the devices rule `r` selects.
  absl::Status Share(size_t r) {
    const SharingRule& rule = config_.sharing[r];
    const std::string field = absl::StrCat(config_.SharingField(), ".resources[", r, "]");
    auto it = plan_.resources.find(rule.resource);
    if (it != plan_.resources.end() && it->second.empty()) return absl::OkStatus();
    if (it == plan_.resources.end()) {
      plan_.warnings.push_back(absl::StrCat(field, ": the node has no ", rule.resource));
      return absl::OkStatus();
    }
    const std::vector<PluginDevice> devices = it->second;
    std::vector<std::string> order;  // distinct devices, replicas of one counted once
    for (const PluginDevice& d : devices) {
      if (std::find(order.begin(), order.end(), d.physical_id) == order.end()) {
        order.push_back(d.physical_id);
      }
    }
    for (const std::string& selector : rule.devices.list) {
      const bool found = std::any_of(devices.begin(), devices.end(), [&](const PluginDevice& d) {
        return Selects(selector, d, GpuOf(d));
      });
      if (!found) {
        return absl::InvalidArgumentError(absl::StrCat(field, ".devices: \"", selector,
                                                       "\" is not a ", rule.resource,
                                                       " device on this node"));
      }
    }
    const std::string target = config_.SharedName(rule);
    std::vector<PluginDevice> kept, shared;
    for (const PluginDevice& d : devices) {
      if (!Selected(rule, order, d)) {
        kept.push_back(d);
        continue;
      }
      if (!shared_.insert({rule.resource, d.physical_id}).second) {
        return absl::InvalidArgumentError(absl::StrCat(field, ".devices: ", d.physical_id,
                                                       " is shared by an earlier rule already"));
      }
      if (rule.replicas == 1) {
        kept.push_back(d);
        continue;
      }
      if (config_.mps) GPUOP_RETURN_IF_ERROR(CheckMps(field, rule, d));
      // Replicas stay in the device's place when they keep the resource's name.
      std::vector<PluginDevice>& into = target == rule.resource ? kept : shared;
      for (int n = 0; n < rule.replicas; ++n) {
        PluginDevice replica = d;
        replica.id = absl::StrCat(d.physical_id, "::", n);
        replica.replica = n;
        replica.replicas = rule.replicas;
        replica.mps = config_.mps;
        into.push_back(std::move(replica));
      }
    }
    if (target == rule.resource) {
      it->second = std::move(kept);
      return absl::OkStatus();
    }
    it->second = std::move(kept);
    if (it->second.empty()) plan_.resources.erase(it);
    if (!shared.empty()) {
      auto& renamed = plan_.resources[target];
      renamed.insert(renamed.end(), shared.begin(), shared.end());
    }
    return absl::OkStatus();
  }

  const std::vector<hw::Gpu>& gpus_;
  const DevicePluginConfig& config_;
  ResourcePlan plan_;
  std::set<std::pair<std::string, std::string>> shared_;  // (resource, physical id)
};

}  // namespace

bool PatternMatches(const std::string& pattern, const std::string& s) {
  size_t at = 0;
  for (absl::string_view piece : absl::StrSplit(pattern, '*')) {
    const size_t found = absl::string_view(s).find(piece, at);
    if (found == absl::string_view::npos) return false;
    at = found + piece.size();
  }
  return true;
}

std::map<std::string, std::map<std::string, int>> MpsShares(const ResourcePlan& plan) {
  std::map<std::string, std::map<std::string, int>> out;
  for (const auto& [resource, devices] : plan.resources) {
    for (const PluginDevice& d : devices) {
      if (d.mps) out[resource][d.gpu_id] = d.replicas;
    }
  }
  return out;
}

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

std::vector<std::string> ResourcePlan::Ids(const std::string& resource) const {
  std::vector<std::string> ids;
  if (auto it = resources.find(resource); it != resources.end()) {
    for (const auto& d : it->second) ids.push_back(d.id);
  }
  return ids;
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
    if (!gpu->mig_unreadable.empty()) {
      out.reason =
          absl::StrCat(Describe(*gpu), "'s MIG devices cannot be read: ", gpu->mig_unreadable);
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
    for (const hw::MigDevice& mig : gpu->mig_devices) profiles.insert(hw::MigDeviceProfile(mig));
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
  return Planner(gpus, config).Plan();
}

}  // namespace gpuop::agent
