#ifndef GPUOP_HW_AMD_KFD_TOPOLOGY_H_
#define GPUOP_HW_AMD_KFD_TOPOLOGY_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

// The KFD (amdkfd) topology under /sys/class/kfd/kfd/topology/nodes/<n>/: one node per CPU
// NUMA node and one per GPU (or GPU partition), each a `properties` file of "key value" lines,
// memory banks and io_links to other nodes.
namespace gpuop::hw {

// io_link types (the HSA runtime's HSA_IOLINKTYPE_*).
inline constexpr uint64_t kKfdIoLinkPcie = 2;
inline constexpr uint64_t kKfdIoLinkXgmi = 11;

struct KfdIoLink {
  int node_to = 0;
  uint64_t type = 0;
  uint64_t weight = 0;
};

struct KfdNode {
  int id = 0;
  std::map<std::string, uint64_t> properties;
  std::optional<uint64_t> memory_bytes;  // mem_banks/0 size_in_bytes
  std::vector<KfdIoLink> io_links;

  // The property, or `fallback` when the node does not report it.
  uint64_t Get(const std::string& key, uint64_t fallback = 0) const;
  // A GPU node: it has a gfx target (CPU nodes report 0).
  bool IsGpu() const { return Get("gfx_target_version") > 0; }
  // The PCI address KFD encodes in domain and location_id ("0000:43:00.0").
  std::string PciAddress() const;
};

struct KfdTopology {
  std::vector<KfdNode> nodes;  // by node id
  // Nodes that could not be read, each with the path and the reason. A node removed while it
  // was read is not reported.
  std::vector<std::string> warnings;

  // The GPU node whose drm_render_minor is `minor`, or else whose PCI address is `address`.
  const KfdNode* FindGpu(int render_minor, const std::string& address) const;
};

// Parses a properties file: one "key value" line per property, values unsigned decimal. Lines
// that do not parse are skipped, so a property of a newer kernel in another format costs
// nothing.
std::map<std::string, uint64_t> ParseKfdProperties(absl::string_view text);

// Reads <sysfs_root>/class/kfd/kfd/topology/nodes. Empty when KFD is absent (amdkfd not
// loaded, no supported GPU). Thread-safe; reads only.
KfdTopology ReadKfdTopology(const std::string& sysfs_root);

}  // namespace gpuop::hw

#endif  // GPUOP_HW_AMD_KFD_TOPOLOGY_H_
