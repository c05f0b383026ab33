#ifndef GPUOP_OPERATOR_NODES_NODE_LABELS_H_
#define GPUOP_OPERATOR_NODES_NODE_LABELS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "kube/types/node.h"
#include "operator/api/node_pool.h"
#include "operator/api/policy.h"

namespace gpuop::op {

// Node labels others write that the operator reads.
//
// node-feature-discovery labels each PCI device of a whitelisted class (by default classes 03
// display, 0b40 coprocessor and 12 processing accelerator) as
// feature.node.kubernetes.io/pci-<fields>.present=true, where <fields> are its deviceLabelFields
// joined by '_' in the fixed order class, vendor, device, subsystem_vendor, subsystem_device:
// pci-0302_10de (the default class and vendor), pci-10de (vendor only, as NVIDIA's GPU operator
// configures NFD), pci-0302_10de_2330 and so on. NfdPciGpuVendor reads any of them.
inline constexpr char kNfdPciLabelPrefix[] = "feature.node.kubernetes.io/pci-";
inline constexpr char kNfdNvidiaLabel[] = "feature.node.kubernetes.io/pci-10de.present";
inline constexpr char kNfdAmdLabel[] = "feature.node.kubernetes.io/pci-1002.present";
// gpuop's own discovery (the discovery component from PCI sysfs, the labels component from the
// drivers): "true" on GPU nodes, "false" on nodes PCI discovery found none on; absent while the
// node is not known yet, which is what runs the discovery component there.
inline constexpr char kAgentGpuPresentLabel[] = "gpuop.io/gpu.present";
// The vendors gpuop's discovery found: "nvidia", "amd", or "mixed" for both.
inline constexpr char kAgentGpuVendorLabel[] = "gpuop.io/gpu.vendor";
// NVIDIA's GPU feature discovery (and gpuop's labels component) on NVIDIA GPU nodes.
inline constexpr char kGfdGpuPresentLabel[] = "nvidia.com/gpu.present";
// The agent found a driver already loaded on the host (not from gpuop's driver container).
inline constexpr char kDriverPreinstalledLabel[] = "gpuop.io/driver.preinstalled";
// gpuop's discovery found the nouveau module holding NVIDIA GPUs.
inline constexpr char kNouveauLoadedLabel[] = "gpuop.io/nouveau.loaded";
// The node's OS as node-feature-discovery labels it (os-release ID and VERSION_ID), and as
// gpuop's discovery does from the host's /etc/os-release when NFD is not there.
inline constexpr char kNfdOsIdLabel[] = "feature.node.kubernetes.io/system-os_release.ID";
inline constexpr char kNfdOsVersionLabel[] =
    "feature.node.kubernetes.io/system-os_release.VERSION_ID";
inline constexpr char kAgentOsIdLabel[] = "gpuop.io/os-release.ID";
inline constexpr char kAgentOsVersionLabel[] = "gpuop.io/os-release.VERSION_ID";
// "false" takes every component off the node.
inline constexpr char kDeployOperandsLabel[] = "gpuop.io/deploy.operands";
// The value of gpuop.io/deploy.driver on nodes whose host has its own driver.
inline constexpr char kHostDriverValue[] = "host-driver";
// The deploy label of an NVIDIA-only component (driver container, MIG manager) on a node whose
// GPUs are all AMD: the component does not apply there.
inline constexpr char kNotApplicableValue[] = "not-applicable";

inline constexpr uint16_t kPciVendorNvidia = 0x10de;
inline constexpr uint16_t kPciVendorAmd = 0x1002;

// The GPU vendor an NFD PCI label key names (kPciVendorNvidia or kPciVendorAmd), in any of
// NFD's forms: a class-first key (pci-0302_10de..., pci-1200_1002...) whose class is a display
// (03xx), coprocessor (0b40) or processing accelerator (12xx) class, or a key without the class
// that starts with the vendor (pci-10de, pci-1002_74a1). Nothing for any other key, another
// vendor (the BMC's pci-0300_1a03) or another class. Pure; never throws.
std::optional<uint16_t> NfdPciGpuVendor(absl::string_view key);

// What a node's labels say about its GPUs: NFD's PCI labels (value "true"), gpuop's discovery
// labels, and NVIDIA's nvidia.com/gpu.present.
struct NodeGpus {
  bool nvidia = false;
  bool amd = false;
  // gpuop.io/gpu.present=true with no vendor known.
  bool unknown_vendor = false;
  bool any() const { return nvidia || amd || unknown_vendor; }
  // AMD GPUs and no sign of NVIDIA ones: the NVIDIA-only components do not apply.
  bool amd_only() const { return amd && !nvidia; }
};
NodeGpus GpusOf(const kube::Node& node);

// A GPU node: NFD saw an NVIDIA or AMD GPU, gpuop's discovery found GPUs, or NVIDIA's GPU
// feature discovery labelled it.
bool IsGpuNode(const kube::Node& node);

// Which pool each GPU node belongs to. A node two or more pools select belongs to none of them
// and is listed as a conflict under each.
struct PoolAssignment {
  std::map<std::string, std::string> pool_of;                 // node -> pool
  std::map<std::string, std::vector<std::string>> conflicts;  // pool -> nodes
  std::map<std::string, int> members;                         // pool -> nodes (no conflicts)
  bool Conflicted(const std::string& node) const;
};
PoolAssignment AssignPools(const std::vector<const kube::Node*>& gpu_nodes,
                           const std::vector<NodePool>& pools);

// The time-slicing configuration name the operator generates for a pool.
std::string TimeSlicingConfigName(const std::string& pool);

// The node's OS as NVIDIA tags driver images: os-release ID and VERSION_ID joined
// ("ubuntu22.04", "rhel9.4"), from NFD's labels or else gpuop's; nullopt when neither has both.
std::optional<std::string> NodeOsTag(const kube::Node& node);

// The gpuop.io/driver.os value of a node under `driver` (render.h DriverPerNode): its OS
// (driver.osTag, or NodeOsTag), with precompiled drivers `kernel_version` (the kubelet's
// nodeInfo.kernelVersion) before it. nullopt when something is unknown or the value cannot be a
// label value: no driver DaemonSet selects the node then.
std::optional<std::string> NodeDriverOs(const kube::Node& node, const DriverSpec& driver,
                                        absl::string_view kernel_version);

// The labels the operator wants on a node, and the ones of its own to take off.
struct NodeLabelChange {
  std::map<std::string, std::string> desired;  // the operator's labels, as they should be
  // gpuop.io/driver-pool-target to write with them: a value sets it, "" removes it, nullopt
  // leaves it (node_state.h).
  std::optional<std::string> pool_target;
  // gpuop.io/driver-os-target, the same way ("-": the driver.os label is to go).
  std::optional<std::string> os_target;
  // gpuop.io/driver-removal to write, the same way: the reason the running driver is to leave
  // the node; "" when it stays (written only while the driver is still deployed: once the
  // upgrade has switched gpuop.io/deploy.driver off, the annotation is the upgrade's).
  std::optional<std::string> driver_removal;
  bool needed = false;  // the node differs from `desired` (or from pool_target)
};

// What the operator's labels on `node` should be:
//   gpuop.io/managed=true on GPU nodes the policy's nodeSelector admits;
//   gpuop.io/deploy.<component>=true for each enabled component, unless the node says otherwise
//     (a value other than "true" set by a person or another component: paused, false, ...),
//     gpuop.io/deploy.operands=false, or, for the driver, a host driver (host-driver; never
//     while `driver_pod_on_node`: a driver gpuop's container loaded is not the host's, and
//     taking its pod away would leave the node with none);
//   gpuop.io/driver.pool, nvidia.com/device-plugin.config, nvidia.com/mig.config and
//     gpuop.io/power.policy (the pool's power settings over the policy's) from the
//     node's pool; gpuop.io/driver.os (NodeDriverOs) while the driver image depends on the node. A
//     node in conflict keeps the values it has. A node whose driver pod runs keeps its
//     gpuop.io/driver.pool when its pool changes: the new pool goes into
//     gpuop.io/driver-pool-target, and the driver upgrade moves the node (switching the label
//     would make the DaemonSet controller kill the driver under the node's workloads); so does a
//     node whose gpuop.io/driver.os changes (gpuop.io/driver-os-target).
// A node whose driver pod runs (gpuop.io/deploy.driver=true, `driver_pod_on_node`) keeps that
// label and gpuop.io/driver.pool when the driver is to leave it (spec.components.driver off,
// gpuop.io/deploy.operands=false, the node no longer admitted by the policy): the reason goes
// into gpuop.io/driver-removal and the upgrade removes the driver with its ceremony.
// `policy` is null when there is no policy: the operator then takes its labels off, but for
// gpuop.io/deploy.driver and gpuop.io/driver.pool, which keep the node's driver running (a
// driver is taken away only by the upgrade's ceremony or the uninstall's).
// `owned` are the label keys the operator's field manager owns now (from managedFields); an owned
// key that is no longer desired makes the change needed (applying without it removes it).
NodeLabelChange DesiredNodeLabels(const kube::Node& node, const std::vector<std::string>& owned,
                                  const PolicySpec* policy, const NodePool* pool, bool conflicted,
                                  bool driver_pod_on_node = false,
                                  absl::string_view kernel_version = "");

// Whether DesiredNodeLabels decides `key`: gpuop.io/managed, gpuop.io/deploy.<component> and the
// pool-derived labels. The operator writes other labels as the same field manager (the upgrade
// and remediation state labels); they belong to their controllers, and node labelling must
// neither count them as its own nor drop them.
bool IsNodeLabellingKey(absl::string_view key);

// The label keys `manager` owns in an object's metadata.managedFields.
std::vector<std::string> OwnedLabelKeys(const nlohmann::json& object, const std::string& manager);

}  // namespace gpuop::op

#endif  // GPUOP_OPERATOR_NODES_NODE_LABELS_H_
