#ifndef GPUOP_HW_PCI_PCI_H_
#define GPUOP_HW_PCI_PCI_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hw/model.h"

// PCI discovery of accelerators from sysfs (/sys/bus/pci/devices/<dddd:bb:dd.f>/). It needs no
// vendor driver, so it answers "which GPUs does this node have" before any driver is installed,
// which is what decides the operands to deploy.
namespace gpuop::hw {

inline constexpr uint16_t kPciVendorNvidia = 0x10de;
inline constexpr uint16_t kPciVendorAmd = 0x1002;
inline constexpr uint16_t kPciVendorIntel = 0x8086;

// Base classes (the top byte of the 24-bit class code).
inline constexpr uint8_t kPciBaseClassDisplay = 0x03;      // 0300 VGA, 0302 3D, 0380 other
inline constexpr uint8_t kPciBaseClassAccelerator = 0x12;  // processing accelerators
// NVSwitch presents itself as an "other bridge" (go-nvlib's PCINvSwitchClass).
inline constexpr uint32_t kPciClassNvSwitch = 0x068000;

struct PciDevice {
  std::string address;  // sysfs form, lower case: "0000:17:00.0"
  uint16_t vendor_id = 0;
  uint16_t device_id = 0;
  // Absent on some passthrough setups that do not emulate them.
  std::optional<uint16_t> subsystem_vendor_id;
  std::optional<uint16_t> subsystem_device_id;
  uint32_t class_code = 0;  // 24 bits, 0xCCSSPP (base class, subclass, programming interface)
  uint8_t revision = 0;     // 0 when the kernel does not say
  // The device's NUMA node; absent when the kernel reports -1 (no affinity, as in most VMs) or
  // nothing, in which case a device plugin leaves TopologyInfo out.
  std::optional<int> numa_node;
  std::string driver;  // bound driver ("nvidia", "amdgpu", "vfio-pci"); empty when unbound
  std::optional<int> iommu_group;
  std::string iommu_group_type;       // "DMA", "DMA-FQ", "identity", ...; empty when unknown
  std::optional<int> sriov_totalvfs;  // present on SR-IOV capable devices
  std::string local_cpulist;          // "0-55,112-167"; empty when unknown

  // kNvidia, kAmd, kIntel, or kUnknown for any other vendor.
  Vendor vendor() const;
  // The class without the programming interface, as NFD prints it: 0x0302.
  uint16_t class4() const { return static_cast<uint16_t>(class_code >> 8); }
  uint8_t base_class() const { return static_cast<uint8_t>(class_code >> 16); }
  // A display controller or processing accelerator of NVIDIA, AMD or Intel.
  bool IsGpu() const;
  // An NVIDIA NVSwitch (class 0x0680xx).
  bool IsNvSwitch() const;
};

// What DiscoverPci found: the accelerators, plus what it could not read.
struct PciInventory {
  // GPUs and NVSwitches, sorted by address.
  std::vector<PciDevice> devices;
  // One Status per problem, each naming the file: a device whose mandatory file (vendor,
  // device, class) is missing or malformed is left out of `devices` and reported here; a device
  // with a malformed optional file (numa_node, sriov_totalvfs) stays in `devices` without that
  // attribute and is reported here too. A missing optional file is normal and not reported.
  std::vector<absl::Status> errors;

  // GPUs of one vendor, or of every vendor, in address order.
  std::vector<PciDevice> Gpus(Vendor vendor) const;
  std::vector<PciDevice> Gpus() const;
  int GpuCount(Vendor vendor) const;
  bool HasGpu(Vendor vendor) const { return GpuCount(vendor) > 0; }
  bool HasNvidiaGpu() const { return HasGpu(Vendor::kNvidia); }
  std::vector<PciDevice> NvSwitches() const;
  int NvSwitchCount() const;
  // The device at `address` ("0000:17:00.0"), or nullptr.
  const PciDevice* Find(absl::string_view address) const;
};

// Whether a device of `vendor_id` and `class_code` is one PCI discovery reports: an NVIDIA, AMD
// or Intel display controller (0x03xxxx) or processing accelerator (0x12xxxx), or an NVIDIA
// NVSwitch.
bool IsAcceleratorCandidate(uint16_t vendor_id, uint32_t class_code);

// Lists the accelerators under `sysfs_root` (the host's /sys, or a test tree). Only devices that
// pass IsAcceleratorCandidate are read in full; an unrelated device costs one read of `vendor`
// (and `class` for the three vendors) and never produces an error unless its `vendor` file is
// unreadable. Fails only when <sysfs_root>/bus/pci/devices cannot be listed (NotFound when it
// does not exist: a wrong root, or a machine without PCI).
//
// Thread-safe; reads only.
[[nodiscard]] absl::StatusOr<PciInventory> DiscoverPci(const std::string& sysfs_root = "/sys");

// Reads one device directory in full, of any vendor or class. Fails, naming the file, when a
// mandatory attribute (vendor, device, class) is missing or malformed. A malformed optional
// attribute is left empty and, when `problems` is given, reported there.
[[nodiscard]] absl::StatusOr<PciDevice> ReadPciDevice(
    const std::string& device_dir, const std::string& address,
    std::vector<absl::Status>* problems = nullptr);

// Whether `name` is a PCI address in sysfs form ("0000:17:00.0", lower-case hex).
bool IsPciAddress(absl::string_view name);

}  // namespace gpuop::hw

#endif  // GPUOP_HW_PCI_PCI_H_
