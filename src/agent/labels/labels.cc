#include "agent/labels/labels.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "hw/amd/amd_labels.h"

namespace gpuop::agent {
namespace {

constexpr char kNvidia[] = "nvidia.com/";

std::string MiB(uint64_t bytes) { return std::to_string(bytes / (1024 * 1024)); }

// The most common value of `key(gpu)` among GPUs; nodes rarely mix models, and when they do
// the majority describes what a pod is most likely to get.
template <typename Fn>
std::string MostCommon(const std::vector<hw::Gpu>& gpus, Fn key) {
  std::map<std::string, int> counts;
  for (const auto& g : gpus) ++counts[key(g)];
  std::string best;
  int best_count = 0;
  for (const auto& [value, count] : counts) {
    if (count > best_count) {
      best = value;
      best_count = count;
    }
  }
  return best;
}

void NvidiaLabels(const LabelInputs& in, NodeLabels& labels) {
  const hw::Inventory& inv = *in.nvidia;
  if (inv.gpus.empty()) return;
  auto put = [&labels](const std::string& key, const std::string& value) {
    labels[absl::StrCat(kNvidia, key)] = LabelValue(value);
  };
  const MigStrategy strategy = in.plugin_config.mig_strategy;
  const hw::Gpu& first = inv.gpus.front();
  std::string product = MostCommon(inv.gpus, [](const hw::Gpu& g) { return g.product; });
  std::string count = std::to_string(inv.gpus.size());
  std::string memory = MostCommon(inv.gpus, [](const hw::Gpu& g) { return MiB(g.memory_bytes); });

  const MigSingleLayout single =
      strategy == MigStrategy::kSingle ? ClassifyMigSingle(inv.gpus) : MigSingleLayout{};
  if (single.kind == MigSingleLayout::Kind::kMigDevices) {
    // Under single the MIG devices are the node's "GPUs".
    const hw::MigDevice& mig = single.first_mig_gpu->mig_devices.front();
    product = absl::StrCat(single.first_mig_gpu->product, "-MIG-", mig.profile);
    size_t n = 0;
    for (const auto& g : inv.gpus) n += g.mig_devices.size();
    count = std::to_string(n);
    memory = MiB(mig.memory_bytes);
  }
  const std::string resource = "nvidia.com/gpu";
  const int replicas = in.plan.has_value() ? in.plan->Replicas(resource) : 1;
  const bool shared = in.plugin_config.Shared() && replicas > 1;
  bool renamed = false;
  for (const auto& rule : in.plugin_config.sharing) {
    if (rule.resource == resource && in.plugin_config.SharedName(rule) != resource) renamed = true;
  }
  if (shared && !renamed) product = absl::StrCat(product, "-SHARED");
  // GFD's invalid mig-strategy=single labels: the first MIG-enabled GPU's model with
  // "-MIG-INVALID", and count, replicas and memory 0, so nothing selects the node for GPUs.
  const bool invalid = single.kind == MigSingleLayout::Kind::kInvalid;
  if (invalid) product = absl::StrCat(single.first_mig_gpu->product, "-MIG-INVALID");
  const std::string zero(1, '0');

  put("gpu.present", "true");
  put("gpu.product", absl::StrReplaceAll(product, {{" ", "-"}}));
  put("gpu.count", invalid ? zero : count);
  put("gpu.memory", invalid ? zero : memory);
  put("gpu.replicas", invalid ? zero : std::to_string(shared ? replicas : 1));
  put("gpu.sharing-strategy", shared ? "time-slicing" : "none");
  const std::string family = MostCommon(inv.gpus, [](const hw::Gpu& g) { return g.architecture; });
  if (!family.empty()) put("gpu.family", family);
  if (first.compute_major > 0) {
    put("gpu.compute.major", std::to_string(first.compute_major));
    put("gpu.compute.minor", std::to_string(first.compute_minor));
  }
  if (!in.machine.empty()) put("gpu.machine", absl::StrReplaceAll(in.machine, {{" ", "-"}}));
  if (!inv.driver_version.empty()) {
    const std::vector<std::string> parts = absl::StrSplit(inv.driver_version, '.');
    put("cuda.driver-version.full", inv.driver_version);
    if (parts.size() >= 1) put("cuda.driver-version.major", parts[0]);
    if (parts.size() >= 2) put("cuda.driver-version.minor", parts[1]);
    if (parts.size() >= 3) put("cuda.driver-version.revision", parts[2]);
  }
  if (inv.cuda_driver_version > 0) {
    const int major = inv.cuda_driver_version / 1000;
    const int minor = inv.cuda_driver_version % 1000 / 10;
    put("cuda.runtime-version.major", std::to_string(major));
    put("cuda.runtime-version.minor", std::to_string(minor));
    put("cuda.runtime-version.full", absl::StrCat(major, ".", minor));
  }
  const bool mig_capable =
      std::any_of(inv.gpus.begin(), inv.gpus.end(), [](const hw::Gpu& g) { return g.mig_capable; });
  put("mig.capable", mig_capable ? "true" : "false");
  put("mps.capable", "false");
  if (mig_capable) put("mig.strategy", MigStrategyName(strategy));

  if (strategy == MigStrategy::kMixed) {
    // Per-profile labels, as GPU feature discovery writes them under mixed.
    std::map<std::string, std::pair<int, const hw::MigDevice*>> profiles;
    std::map<std::string, unsigned int> slices;
    for (const auto& g : inv.gpus) {
      for (const auto& m : g.mig_devices) {
        auto& entry = profiles[m.profile];
        ++entry.first;
        entry.second = &m;
      }
      for (const auto& p : g.mig_profiles) slices[p.name] = p.slice_count;
    }
    for (const auto& [profile, entry] : profiles) {
      const std::string base = absl::StrCat("mig-", absl::StrReplaceAll(profile, {{"+", "."}}));
      put(base + ".count", std::to_string(entry.first));
      put(base + ".memory", MiB(entry.second->memory_bytes));
      if (auto it = slices.find(profile); it != slices.end()) {
        put(base + ".slices.gi", std::to_string(it->second));
      }
    }
  }
}

}  // namespace

std::string LabelValue(absl::string_view value) {
  std::string out;
  for (char c : value) {
    const bool ok =
        absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    out += ok ? c : '-';
  }
  if (out.size() > 63) out.resize(63);
  while (!out.empty() && !absl::ascii_isalnum(static_cast<unsigned char>(out.back()))) {
    out.pop_back();
  }
  size_t start = 0;
  while (start < out.size() && !absl::ascii_isalnum(static_cast<unsigned char>(out[start]))) {
    ++start;
  }
  return out.substr(start);
}

NodeLabels ComputeNodeLabels(const LabelInputs& inputs) {
  NodeLabels labels;
  std::vector<std::string> vendors;
  if (inputs.nvidia.has_value() && !inputs.nvidia->gpus.empty()) {
    NvidiaLabels(inputs, labels);
    vendors.push_back("nvidia");
  }
  if (inputs.amd.has_value() && !inputs.amd->inventory.gpus.empty()) {
    for (auto& [k, v] : hw::AmdNodeLabels(*inputs.amd)) labels[k] = v;
    vendors.push_back("amd");
  }
  if (!vendors.empty()) {
    labels["gpuop.io/gpu.present"] = "true";
    labels["gpuop.io/gpu.vendor"] = vendors.size() == 1 ? vendors[0] : "mixed";
  }
  return labels;
}

}  // namespace gpuop::agent
