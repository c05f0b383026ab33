#ifndef GPUOP_HW_PCI_NFD_LABELS_H_
#define GPUOP_HW_PCI_NFD_LABELS_H_

#include <map>
#include <string>
#include <vector>

#include "hw/pci/pci.h"

// The labels node-feature-discovery's `pci` source would put on the node for the devices PCI
// discovery found, so the operator can decide GPU nodes the same way with or without NFD.
namespace gpuop::hw {

inline constexpr char kNfdLabelPrefix[] = "feature.node.kubernetes.io/";

// NFD's deviceLabelFields.
enum class NfdPciField { kClass, kVendor, kDevice, kSubsystemVendor, kSubsystemDevice };

// NFD's `sources.pci` configuration.
struct NfdPciConfig {
  // Prefixes of the 4-hex-digit class ("03" matches every display subclass); lower case.
  std::vector<std::string> device_class_whitelist = {"03", "0b40", "12"};
  // Joined with "_" in NFD's fixed order (class, vendor, device, subsystem_vendor,
  // subsystem_device) whatever the order here; empty means NFD's default {class, vendor}.
  std::vector<NfdPciField> device_label_fields = {NfdPciField::kClass, NfdPciField::kVendor};

  // NFD's defaults: labels like "pci-0302_10de.present".
  static NfdPciConfig Default() { return {}; }
  // What the NVIDIA GPU operator deploys NFD with: classes 02, 0200, 0207, 0300, 0302 and the
  // vendor alone, giving "pci-10de.present".
  static NfdPciConfig NvidiaGpuOperator();
};

// The labels and their values ("true"), keyed by full label name:
//   feature.node.kubernetes.io/pci-0302_10de.present = true
//   feature.node.kubernetes.io/pci-0302_10de.sriov.capable = true   (sriov_totalvfs exists)
//
// Like NFD, a device lacking one of NFD's mandatory attributes (subsystem_vendor and
// subsystem_device included) gets no label. The input is PCI discovery's output, so only
// NVIDIA, AMD and Intel accelerators can produce labels; NFD would also label other vendors'
// devices in whitelisted classes. Pure; thread-safe.
std::map<std::string, std::string> NfdPciLabels(const PciInventory& inventory,
                                                const NfdPciConfig& config = {});

}  // namespace gpuop::hw

#endif  // GPUOP_HW_PCI_NFD_LABELS_H_
