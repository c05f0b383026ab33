#include "hw/amd/kfd_topology.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "hw/pci/sysfs.h"

namespace gpuop::hw {

uint64_t KfdNode::Get(const std::string& key, uint64_t fallback) const {
  auto it = properties.find(key);
  return it == properties.end() ? fallback : it->second;
}

std::string KfdNode::PciAddress() const {
  const uint64_t location = Get("location_id");
  return absl::StrFormat("%04x:%02x:%02x.%x", Get("domain"), (location >> 8) & 0xff,
                         (location >> 3) & 0x1f, location & 0x7);
}

const KfdNode* KfdTopology::FindGpu(int render_minor, const std::string& address) const {
  for (const KfdNode& node : nodes) {
    if (node.IsGpu() && render_minor > 0 &&
        node.Get("drm_render_minor") == static_cast<uint64_t>(render_minor)) {
      return &node;
    }
  }
  for (const KfdNode& node : nodes) {
    if (node.IsGpu() && node.PciAddress() == address) return &node;
  }
  return nullptr;
}

std::map<std::string, uint64_t> ParseKfdProperties(absl::string_view text) {
  std::map<std::string, uint64_t> properties;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (fields.size() != 2) continue;
    if (std::optional<uint64_t> value = sysfs::ParseUint(fields[1])) {
      properties[std::string(fields[0])] = *value;
    }
  }
  return properties;
}

KfdTopology ReadKfdTopology(const std::string& sysfs_root) {
  KfdTopology topology;
  const std::string nodes_dir = sysfs::Join(sysfs_root, "class/kfd/kfd/topology/nodes");
  absl::StatusOr<std::vector<std::string>> names = sysfs::ListDir(nodes_dir);
  if (!names.ok()) {
    if (!absl::IsNotFound(names.status())) {
      topology.warnings.push_back(std::string(names.status().message()));
    }
    return topology;
  }
  for (const std::string& name : *names) {
    std::optional<int64_t> id = sysfs::ParseInt(name);
    if (!id || *id < 0) continue;
    const std::string dir = sysfs::Join(nodes_dir, name);
    absl::StatusOr<std::string> text = sysfs::ReadString(sysfs::Join(dir, "properties"));
    if (!text.ok()) {
      if (!absl::IsNotFound(text.status())) {
        topology.warnings.push_back(std::string(text.status().message()));
      }
      continue;
    }
    KfdNode node{.id = static_cast<int>(*id), .properties = ParseKfdProperties(*text)};
    if (auto bank = sysfs::ReadOptionalString(sysfs::Join(dir, "mem_banks/0/properties"))) {
      auto props = ParseKfdProperties(*bank);
      if (auto it = props.find("size_in_bytes"); it != props.end()) node.memory_bytes = it->second;
    }
    const std::string links_dir = sysfs::Join(dir, "io_links");
    if (absl::StatusOr<std::vector<std::string>> links = sysfs::ListDir(links_dir); links.ok()) {
      for (const std::string& link : *links) {
        auto link_text =
            sysfs::ReadOptionalString(sysfs::Join(links_dir, absl::StrCat(link, "/properties")));
        if (!link_text) continue;
        auto props = ParseKfdProperties(*link_text);
        if (!props.contains("node_to") || !props.contains("type")) continue;
        node.io_links.push_back({.node_to = static_cast<int>(props["node_to"]),
                                 .type = props["type"],
                                 .weight = props["weight"]});
      }
    }
    topology.nodes.push_back(std::move(node));
  }
  std::sort(topology.nodes.begin(), topology.nodes.end(),
            [](const KfdNode& a, const KfdNode& b) { return a.id < b.id; });
  return topology;
}

}  // namespace gpuop::hw
