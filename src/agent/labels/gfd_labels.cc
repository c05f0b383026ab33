#include "agent/labels/gfd_labels.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "agent/deviceplugin/resources.h"
#include "hw/mig_profile.h"
#include "hw/nvml/nvml_accelerator.h"

namespace gpuop::agent::internal {
namespace {

constexpr char kNvidia[] = "nvidia.com/";
constexpr char kGpuResource[] = "nvidia.com/gpu";

std::string MiB(uint64_t bytes) { return std::to_string(bytes >> 20); }

// How GFD labels the sharing of one resource: the replicas of the time-slicing (or MPS) rule
// naming it, whether that rule renames it, and the strategy. GFD labels MIG-enabled GPUs as
// whole GPUs "without sharing": replicas 0, strategy none.
struct Sharing {
  int replicas = 1;
  bool renamed = false;
  std::string strategy = "none";
};

Sharing SharingOf(const DevicePluginConfig& config, const std::string& resource) {
  Sharing out;
  bool found = false;
  for (const SharingRule& rule : config.sharing) {
    if (rule.resource != resource) continue;
    // Several rules for one resource (a gpuop extension: disjoint devices) label the largest.
    out.replicas = found ? std::max(out.replicas, rule.replicas) : rule.replicas;
    out.renamed = out.renamed || config.SharedName(rule) != resource;
    found = true;
  }
  if (out.replicas > 1) {
    out.strategy = config.sharing_strategy == SharingStrategy::kMps ? "mps" : "time-slicing";
  }
  return out;
}

Sharing WithoutSharing() { return {.replicas = 0}; }

// GFD's labels of one resource: "<resource>.<suffix>" keys.
class ResourceLabels {
 public:
  ResourceLabels(NodeLabels& out, std::string resource, Sharing sharing)
      : out_(out), resource_(std::move(resource)), sharing_(std::move(sharing)) {}

  void Put(absl::string_view suffix, const std::string& value) {
    out_[absl::StrCat(resource_, ".", suffix)] = LabelValue(value);
  }

  // product, count, replicas and sharing-strategy. The product joins the sanitised parts with
  // '-' and appends "SHARED" when the resource is shared and not renamed.
  void Base(int count, const std::vector<std::string>& parts) {
    std::vector<std::string> sanitised;
    for (const std::string& part : parts) {
      if (!part.empty()) sanitised.push_back(SanitiseProductPart(part));
    }
    if (!sanitised.empty() && sharing_.replicas > 1 && !sharing_.renamed) {
      sanitised.push_back("SHARED");
    }
    Put("product", absl::StrJoin(sanitised, "-"));
    Put("count", std::to_string(count));
    Put("replicas", std::to_string(sharing_.replicas));
    Put("sharing-strategy", sharing_.strategy);
  }

  // A MIG device's attributes (GFD: nvmlDeviceGetAttributes): memory, multiprocessors, slices
  // of its GPU and compute instance, and the engines it shares.
  void MigAttributes(const hw::MigDevice& mig) {
    Put("memory", MiB(mig.memory_bytes));
    if (!mig.has_attributes) return;
    Put("multiprocessors", std::to_string(mig.multiprocessor_count));
    Put("slices.gi", std::to_string(mig.gpu_instance_slices));
    Put("slices.ci", std::to_string(mig.compute_instance_slices));
    Put("engines.copy", std::to_string(mig.copy_engines));
    Put("engines.decoder", std::to_string(mig.decoders));
    Put("engines.encoder", std::to_string(mig.encoders));
    Put("engines.jpeg", std::to_string(mig.jpeg_engines));
    Put("engines.ofa", std::to_string(mig.ofa_engines));
  }

 private:
  NodeLabels& out_;
  std::string resource_;
  Sharing sharing_;
};

// The MIG profile as GFD names it in products and resources: '+' becomes '.'.
std::string ProfileName(const std::string& profile) {
  std::string out = profile;
  std::replace(out.begin(), out.end(), '+', '.');
  return out;
}

// nvidia.com/gpu.{product,count,replicas,sharing-strategy,memory,family,compute.*} for the
// whole GPUs. GFD writes them once per model, so a node mixing models gets whichever it wrote
// last (Go map order); gpuop labels the model most GPUs have (the first by index on a tie). A
// model with a GPU outside MIG mode is shared per the configuration; a model whose GPUs are all
// in MIG mode is labelled without sharing.
void WholeGpuLabels(const LabelInputs& in, NodeLabels& labels) {
  const std::vector<hw::Gpu>& gpus = in.nvidia->gpus;
  std::map<std::string, int> counts;
  for (const hw::Gpu& g : gpus) ++counts[g.product];
  const hw::Gpu* chosen = &gpus.front();
  for (const hw::Gpu& g : gpus) {
    if (counts[g.product] > counts[chosen->product]) chosen = &g;
  }
  const bool any_whole = std::any_of(gpus.begin(), gpus.end(), [&](const hw::Gpu& g) {
    return g.product == chosen->product && !g.mig_enabled;
  });
  ResourceLabels gpu(labels, kGpuResource,
                     any_whole ? SharingOf(in.plugin_config, kGpuResource) : WithoutSharing());
  gpu.Base(counts[chosen->product], {chosen->product});
  if (chosen->memory_bytes != 0) gpu.Put("memory", MiB(chosen->memory_bytes));
  if (chosen->compute_major != 0) {
    gpu.Put("family", GfdFamily(chosen->compute_major, chosen->compute_minor));
    gpu.Put("compute.major", std::to_string(chosen->compute_major));
    gpu.Put("compute.minor", std::to_string(chosen->compute_minor));
  }
}

// Strategy single: with every GPU in MIG mode and one profile, the MIG devices are
// nvidia.com/gpu; an invalid layout is "<model>-MIG-INVALID" with count, replicas and memory
// 0; with no GPU in MIG mode the whole-GPU labels stand.
void MigSingleLabels(const LabelInputs& in, NodeLabels& labels) {
  const MigSingleLayout layout = ClassifyMigSingle(in.nvidia->gpus);
  if (layout.kind == MigSingleLayout::Kind::kWholeGpus) return;
  if (layout.kind == MigSingleLayout::Kind::kInvalid) {
    ResourceLabels gpu(labels, kGpuResource, WithoutSharing());
    gpu.Put("product",
            absl::StrCat(SanitiseProductPart(layout.first_mig_gpu->product), "-MIG-INVALID"));
    for (const char* suffix : {"count", "replicas", "memory"}) gpu.Put(suffix, "0");
    return;
  }
  int count = 0;
  for (const hw::Gpu& g : in.nvidia->gpus) count += static_cast<int>(g.mig_devices.size());
  const hw::MigDevice& first = layout.first_mig_gpu->mig_devices.front();
  ResourceLabels gpu(labels, kGpuResource, SharingOf(in.plugin_config, kGpuResource));
  gpu.Base(count, {layout.first_mig_gpu->product, "MIG", ProfileName(hw::MigDeviceProfile(first))});
  gpu.MigAttributes(first);
}

// Strategy mixed: nvidia.com/mig-<profile>.* per profile present; MIG-enabled GPUs without
// MIG devices, or whose MIG devices could not be read (Gpu::mig_unreadable), contribute nothing.
void MigMixedLabels(const LabelInputs& in, NodeLabels& labels) {
  struct Profile {
    int count = 0;
    const hw::Gpu* parent = nullptr;
    const hw::MigDevice* first = nullptr;
  };
  std::map<std::string, Profile> profiles;
  for (const hw::Gpu& g : in.nvidia->gpus) {
    for (const hw::MigDevice& m : g.mig_devices) {
      if (m.profile.empty()) continue;
      Profile& p = profiles[ProfileName(hw::MigDeviceProfile(m))];
      if (p.count++ == 0) {
        p.parent = &g;
        p.first = &m;
      }
    }
  }
  for (const auto& [name, p] : profiles) {
    const std::string resource = MigResourceName(hw::MigDeviceProfile(*p.first));
    ResourceLabels mig(labels, resource, SharingOf(in.plugin_config, resource));
    mig.Base(p.count, {p.parent->product, "MIG", name});
    mig.MigAttributes(*p.first);
  }
}

// cuda.driver-version.*, cuda.runtime-version.* and their deprecated spellings cuda.driver.*
// and cuda.runtime.*. GFD fails on a driver version that is not X.Y[.Z] or an unknown CUDA
// version; gpuop leaves those labels out.
void VersionLabels(const hw::Inventory& inv, NodeLabels& labels) {
  auto put = [&labels](absl::string_view key, const std::string& value) {
    labels[absl::StrCat(kNvidia, key)] = LabelValue(value);
  };
  const std::vector<std::string> parts = absl::StrSplit(inv.driver_version, '.');
  if (parts.size() == 2 || parts.size() == 3) {
    const std::string revision = parts.size() == 3 ? parts[2] : "";
    put("cuda.driver-version.major", parts[0]);
    put("cuda.driver-version.minor", parts[1]);
    put("cuda.driver-version.revision", revision);
    put("cuda.driver-version.full", inv.driver_version);
    put("cuda.driver.major", parts[0]);
    put("cuda.driver.minor", parts[1]);
    put("cuda.driver.rev", revision);
  }
  if (inv.cuda_driver_version > 0) {
    const std::string major = std::to_string(inv.cuda_driver_version / 1000);
    const std::string minor = std::to_string(inv.cuda_driver_version % 1000 / 10);
    put("cuda.runtime-version.major", major);
    put("cuda.runtime-version.minor", minor);
    put("cuda.runtime-version.full", absl::StrCat(major, ".", minor));
    put("cuda.runtime.major", major);
    put("cuda.runtime.minor", minor);
  }
}

// GFD's gpu.clique: "<cluster uuid>.<clique id>" when every GPU registered with a fabric is in
// one cluster and one clique; nothing when none is, or when they disagree.
void CliqueLabel(const hw::Inventory& inv, NodeLabels& labels) {
  std::set<std::string> clusters;
  std::set<unsigned int> cliques;
  for (const hw::Gpu& g : inv.gpus) {
    if (!g.fabric.has_value()) continue;
    clusters.insert(g.fabric->cluster_uuid);
    cliques.insert(g.fabric->clique_id);
  }
  if (clusters.size() != 1 || cliques.size() != 1) return;
  labels[absl::StrCat(kNvidia, "gpu.clique")] =
      LabelValue(absl::StrCat(*clusters.begin(), ".", *cliques.begin()));
}

}  // namespace

std::string SanitiseProductPart(absl::string_view part) {
  std::string kept;
  for (char c : part) {
    const bool ok = absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ||
                    c == '.' || c == ' ';
    if (ok) kept += c;
  }
  return absl::StrJoin(absl::StrSplit(kept, ' ', absl::SkipEmpty()), "-");
}

std::string GfdFamily(int compute_major, int compute_minor) {
  const std::string family = hw::NvidiaFamily(compute_major, compute_minor);
  return family.empty() ? "undefined" : family;
}

std::string GfdGpuMode(uint32_t pci_class) {
  switch (pci_class) {
    case 0x030000:
      return "graphics";
    case 0x030200:
      return "compute";
    default:
      return "unknown";
  }
}

void AddGfdLabels(const LabelInputs& in, NodeLabels& labels) {
  const hw::Inventory& inv = *in.nvidia;
  auto put = [&labels](absl::string_view key, const std::string& value) {
    labels[absl::StrCat(kNvidia, key)] = LabelValue(value);
  };
  // The machine type: GFD replaces spaces only.
  std::string machine = in.machine;
  std::replace(machine.begin(), machine.end(), ' ', '-');
  put("gpu.machine", machine);
  VersionLabels(inv, labels);
  const bool mig_capable =
      std::any_of(inv.gpus.begin(), inv.gpus.end(), [](const hw::Gpu& g) { return g.mig_capable; });
  put("mig.capable", mig_capable ? "true" : "false");
  // GFD: true under MPS sharing, false otherwise; a GPU with MIG enabled under MPS fails GFD,
  // where gpuop says false (its device plugin refuses MPS on MIG devices). The MPS control
  // daemon component runs on the nodes this label marks.
  const bool mig_enabled =
      std::any_of(inv.gpus.begin(), inv.gpus.end(), [](const hw::Gpu& g) { return g.mig_enabled; });
  const bool mps = in.plugin_config.sharing_strategy == SharingStrategy::kMps && !mig_enabled;
  put("mps.capable", mps ? "true" : "false");
  WholeGpuLabels(in, labels);
  const MigStrategy strategy = in.plugin_config.mig_strategy;
  if (strategy != MigStrategy::kNone) put("mig.strategy", MigStrategyName(strategy));
  if (strategy == MigStrategy::kSingle) MigSingleLabels(in, labels);
  if (strategy == MigStrategy::kMixed) MigMixedLabels(in, labels);
  // GFD takes the first GPU's class (it stops at the first GPU that differs from it); a class
  // it cannot read fails GFD, gpuop says "unknown".
  put("gpu.mode", GfdGpuMode(inv.gpus.front().pci_class.value_or(0)));
  CliqueLabel(inv, labels);
  if (in.timestamp.has_value()) {
    put("gfd.timestamp", std::to_string(absl::ToUnixSeconds(*in.timestamp)));
  }
}

}  // namespace gpuop::agent::internal
