#include "hw/amd/amd_labels.h"

#include <cmath>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gpuop::hw {
namespace {

// The name part of a label key ("gpu.product-name.<value>") may have 63 characters.
constexpr size_t kMaxNameSegment = 63;

bool IsAlnum(char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)); }

// The labeller's spelling (spaces to "_", no parentheses), then made a valid label value of at
// most `max` characters.
std::string LabelValue(absl::string_view raw, size_t max) {
  std::string value;
  for (char c : raw) {
    if (c == '(' || c == ')') continue;
    value += IsAlnum(c) || c == '.' || c == '-' || c == '_' ? c : '_';
  }
  if (value.size() > max) value.resize(max);
  while (!value.empty() && !IsAlnum(value.back())) value.pop_back();
  size_t start = 0;
  while (start < value.size() && !IsAlnum(value[start])) ++start;
  return value.substr(start);
}

// Values of one property across the GPUs, with how many GPUs have each.
using Counts = std::map<std::string, int>;

// The labeller's labels of one property: under amd.com/, the value when every GPU agrees,
// else one counter per value; under the beta.amd.com/ mirror, a counter per value always, and
// the value too when every GPU agrees.
void Emit(const std::string& name, const Counts& counts, std::map<std::string, std::string>& out) {
  if (counts.empty()) return;
  const std::string key = absl::StrCat(kAmdLabelPrefix, name);
  const std::string beta = absl::StrCat(kAmdBetaLabelPrefix, name);
  const size_t room = kMaxNameSegment - (std::string("gpu.") + name + ".").size();
  for (const auto& [raw, count] : counts) {
    const std::string value = LabelValue(raw, room);
    if (value.empty()) continue;
    out[absl::StrCat(beta, ".", value)] = absl::StrCat(count);
    if (counts.size() > 1) out[absl::StrCat(key, ".", value)] = absl::StrCat(count);
  }
  if (counts.size() == 1) {
    const std::string value = LabelValue(counts.begin()->first, kMaxNameSegment);
    if (value.empty()) return;
    out[key] = value;
    out[beta] = value;
  }
}

// The labeller's partition labels: the node's "<compute>_<memory>" mode when all GPUs that
// report one are in the same (the labeller picks one at random when they differ; gpuop leaves
// it out), and whether the first GPU can be repartitioned.
void PartitionLabels(const std::vector<AmdGpuInfo>& amd, std::map<std::string, std::string>& out) {
  std::set<std::string> modes;
  for (const AmdGpuInfo& info : amd) {
    if (!info.compute_partition.empty() && !info.memory_partition.empty()) {
      modes.insert(absl::StrCat(info.compute_partition, "_", info.memory_partition));
    }
  }
  if (modes.size() == 1) {
    out["amd.com/compute-memory-partition"] = LabelValue(*modes.begin(), kMaxNameSegment);
  }
  const AmdGpuInfo* first = amd.empty() ? nullptr : &amd.front();
  for (const AmdGpuInfo& info : amd) {
    if (info.index < first->index) first = &info;
  }
  const bool compute = first != nullptr && first->compute_partitioning_supported;
  const bool memory = first != nullptr && first->memory_partitioning_supported;
  out["amd.com/compute-partitioning-supported"] = compute ? "true" : "false";
  out["amd.com/memory-partitioning-supported"] = memory ? "true" : "false";
}

// The labeller's rounding: whole MiB, then GiB to the nearest.
std::string VramLabel(uint64_t bytes) {
  const uint64_t mib = bytes / (uint64_t{1} << 20);
  return absl::StrCat(std::llround(static_cast<double>(mib) / 1024.0), "G");
}

}  // namespace

std::map<std::string, std::string> AmdNodeLabels(const Inventory& inventory,
                                                 const std::vector<AmdGpuInfo>& amd,
                                                 const std::string& driver_src_version) {
  Counts family, device_id, product, vram, cu_count, simd_count;
  for (const Gpu& gpu : inventory.gpus) {
    const AmdGpuInfo* info = nullptr;
    for (const AmdGpuInfo& candidate : amd) {
      if (candidate.index == gpu.index) info = &candidate;
    }
    if (!gpu.product.empty()) ++product[gpu.product];
    uint64_t memory = gpu.memory_bytes;
    if (info != nullptr) {
      if (!info->family.empty()) ++family[info->family];
      if (info->device_id != 0) ++device_id[absl::StrFormat("%04x", info->device_id)];
      if (info->kfd_memory_bytes != 0) memory = info->kfd_memory_bytes;
      if (info->cu_count != 0) ++cu_count[absl::StrCat(info->cu_count)];
      if (info->simd_count != 0) ++simd_count[absl::StrCat(info->simd_count)];
    }
    if (memory != 0) ++vram[VramLabel(memory)];
  }
  std::map<std::string, std::string> labels;
  if (inventory.gpus.empty()) return labels;
  Emit("family", family, labels);
  Emit("device-id", device_id, labels);
  Emit("product-name", product, labels);
  Emit("vram", vram, labels);
  Emit("cu-count", cu_count, labels);
  Emit("simd-count", simd_count, labels);
  // The driver's versions have no beta mirror; the labeller writes "" for a file it cannot
  // read (the in-tree driver has no version).
  labels[absl::StrCat(kAmdLabelPrefix, "driver-version")] =
      LabelValue(inventory.driver_version, kMaxNameSegment);
  labels[absl::StrCat(kAmdLabelPrefix, "driver-src-version")] =
      LabelValue(driver_src_version, kMaxNameSegment);
  PartitionLabels(amd, labels);
  return labels;
}

std::map<std::string, std::string> AmdNodeLabels(const AmdDiscovery& discovery) {
  return AmdNodeLabels(discovery.inventory, discovery.gpus, discovery.driver_src_version);
}

}  // namespace gpuop::hw
