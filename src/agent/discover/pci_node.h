#ifndef GPUOP_AGENT_DISCOVER_PCI_NODE_H_
#define GPUOP_AGENT_DISCOVER_PCI_NODE_H_

// `gpuop-agent discover-pci`: whether a node has NVIDIA or AMD GPUs, from PCI sysfs alone (no
// driver, no NVML), written to its Node as labels so the operator knows GPU nodes on a cluster
// without node-feature-discovery. The discovery DaemonSet runs it on every Linux node without
// gpuop.io/gpu.present; once the label is there the DaemonSet's affinity no longer matches and
// the pod goes away, so a known node runs nothing of it.

#include <map>
#include <stop_token>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hw/pci/pci.h"
#include "kube/client/client.h"

namespace gpuop::agent {

// "true" on nodes with an NVIDIA or AMD GPU on the PCI bus, "false" on nodes without.
inline constexpr char kGpuPresentLabel[] = "gpuop.io/gpu.present";
// "nvidia", "amd" or "mixed" (both; label values cannot hold a list); only with present=true.
inline constexpr char kGpuVendorLabel[] = "gpuop.io/gpu.vendor";

// What the PCI bus says about a node's GPUs.
struct PciNodeVerdict {
  // False when it cannot tell: no GPU was found but some device's vendor or class could not be
  // read (it might have been one). Such a verdict is never written to the Node.
  bool conclusive = true;
  // NVIDIA and AMD devices of a display (03) or processing accelerator (12) class, by address;
  // NVSwitches and other vendors (Intel, the BMC's display) are not counted.
  std::vector<std::string> nvidia;
  std::vector<std::string> amd;
  // One line per sysfs file that could not be read, naming it.
  std::vector<std::string> problems;

  // <sysfs>/module/nvidia exists: the NVIDIA kernel module is loaded. Discovery runs before the
  // operator manages the node, so no gpuop driver container can have loaded it: the host has a
  // driver of its own.
  bool nvidia_module_loaded = false;
  // <sysfs>/module/nouveau exists: the open-source driver holds the GPUs, and NVIDIA's driver
  // container cannot load its modules until nouveau is unloaded (or blacklisted and the node
  // rebooted).
  bool nouveau_loaded = false;

  bool present() const { return !nvidia.empty() || !amd.empty(); }
  // "nvidia", "amd", "mixed"; "" without GPUs.
  std::string vendor() const;
};

// The verdict on an inventory from hw::DiscoverPci. Pure.
PciNodeVerdict ClassifyPci(const hw::PciInventory& inventory);

// Scans <sysfs_root>/bus/pci/devices. A sysfs without a PCI bus (<sysfs_root>/bus exists, pci
// does not) is a node without PCI GPUs. NotFound when <sysfs_root>/bus is absent (a wrong
// --sysfs-root or a missing mount: saying "no GPUs" then would hide every GPU of the node);
// other errors when the bus cannot be listed. Reads only; never throws.
[[nodiscard]] absl::StatusOr<PciNodeVerdict> ScanPciNode(const std::string& sysfs_root);

// The labels a conclusive verdict puts on its Node: gpuop.io/gpu.present=true|false,
// gpuop.io/gpu.vendor on GPU nodes, and gpuop.io/driver.preinstalled=true on NVIDIA nodes whose
// host already runs the NVIDIA driver (so the operator never starts a driver container there,
// rather than finding out only once one ran; the key is labels/inventory.h's), and
// gpuop.io/nouveau.loaded=true where nouveau holds NVIDIA GPUs. Empty for an inconclusive one.
inline constexpr char kNouveauLoadedLabel[] = "gpuop.io/nouveau.loaded";
std::map<std::string, std::string> DiscoveryLabels(const PciNodeVerdict& verdict);

// The host's OS as node-feature-discovery labels it (its system-os_release.ID and VERSION_ID),
// under gpuop's keys: the operator picks the driver image for the node's OS from these when NFD
// is not there. Read from an os-release file (KEY=value lines, values optionally quoted); a
// value that cannot be a label value is left out, as is everything when the file cannot be read.
inline constexpr char kOsIdLabel[] = "gpuop.io/os-release.ID";
inline constexpr char kOsVersionLabel[] = "gpuop.io/os-release.VERSION_ID";
std::map<std::string, std::string> OsReleaseLabels(const std::string& os_release_path);

// Writes `labels` on Node `node_name` with server-side apply as kDiscoveryFieldManager (force:
// the hardware is the truth for these keys). A manager of its own, so that the labels
// component, which applies the same keys from the drivers, never removes what discovery set when
// it stops computing them. FailedPrecondition when the Node does not exist (it never creates
// one).
inline constexpr char kDiscoveryFieldManager[] = "gpuop-agent-discovery";
[[nodiscard]] absl::Status LabelNode(kube::Client& client, const std::string& node_name,
                                     const std::map<std::string, std::string>& labels);

struct DiscoveryOptions {
  std::string sysfs_root = "/sys";
  // The host's os-release (OsReleaseLabels); "" for none.
  std::string os_release;
  std::string node_name;
  // Between failed attempts (an inconclusive scan, the API server unreachable), doubling.
  absl::Duration retry_initial = absl::Seconds(1);
  absl::Duration retry_max = absl::Minutes(1);
};

// Scans and labels the Node until both succeed, retrying with backoff; each failure is printed
// to stderr. Returns the verdict written, or Cancelled once `stop` is requested (promptly, also
// during a wait).
[[nodiscard]] absl::StatusOr<PciNodeVerdict> DiscoverAndLabel(kube::Client& client,
                                                              const DiscoveryOptions& options,
                                                              std::stop_token stop);

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_DISCOVER_PCI_NODE_H_
