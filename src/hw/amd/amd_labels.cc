#include "hw/amd/amd_labels.h"

#include <cmath>

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

void Emit(const std::string& name, const Counts& counts, std::map<std::string, std::string>& out) {
  if (counts.empty()) return;
  const std::string key = absl::StrCat(kAmdLabelPrefix, name);
  if (counts.size() == 1) {
    const std::string value = LabelValue(counts.begin()->first, kMaxNameSegment);
    if (!value.empty()) out[key] = value;
    return;
  }
  const size_t room = kMaxNameSegment - (std::string("gpu.") + name + ".").size();
  for (const auto& [raw, count] : counts) {
    const std::string value = LabelValue(raw, room);
    if (!value.empty()) out[absl::StrCat(key, ".", value)] = absl::StrCat(count);
  }
}

// The labeller's rounding: whole MiB, then GiB to the nearest.
std::string VramLabel(uint64_t bytes) {
  const uint64_t mib = bytes / (uint64_t{1} << 20);
  return absl::StrCat(std::llround(static_cast<double>(mib) / 1024.0), "G");
}

}  // namespace

std::map<std::string, std::string> AmdNodeLabels(const Inventory& inventory,
                                                 const std::vector<AmdGpuInfo>& amd) {
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
  if (!inventory.driver_version.empty()) {
    Emit("driver-version", {{inventory.driver_version, 1}}, labels);
  }
  return labels;
}

std::map<std::string, std::string> AmdNodeLabels(const AmdDiscovery& discovery) {
  return AmdNodeLabels(discovery.inventory, discovery.gpus);
}

}  // namespace gpuop::hw
