#include "hw/pci/pci.h"

#include <algorithm>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "hw/pci/sysfs.h"

namespace gpuop::hw {
namespace {

bool IsLowerHex(absl::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
  });
}

// A mandatory hex attribute that must fit `bits`.
absl::StatusOr<uint64_t> ReadHexAttribute(const std::string& path, int bits) {
  absl::StatusOr<uint64_t> value = sysfs::ReadHex(path);
  if (!value.ok()) return value.status();
  if (*value >> bits != 0) {
    return absl::DataLossError(
        absl::StrCat("read ", path, ": 0x", absl::Hex(*value), " does not fit ", bits, " bits"));
  }
  return value;
}

// An optional attribute: empty when the file is absent; reported when it is there but broken.
template <typename T>
std::optional<T> OptionalAttribute(absl::StatusOr<T> value, std::vector<absl::Status>* problems) {
  if (value.ok()) return *value;
  if (!absl::IsNotFound(value.status()) && problems != nullptr) {
    problems->push_back(value.status());
  }
  return std::nullopt;
}

std::optional<int> SmallInt(std::optional<int64_t> value) {
  if (!value || *value < std::numeric_limits<int>::min() ||
      *value > std::numeric_limits<int>::max()) {
    return std::nullopt;
  }
  return static_cast<int>(*value);
}

}  // namespace

Vendor PciDevice::vendor() const {
  switch (vendor_id) {
    case kPciVendorNvidia:
      return Vendor::kNvidia;
    case kPciVendorAmd:
      return Vendor::kAmd;
    case kPciVendorIntel:
      return Vendor::kIntel;
    default:
      return Vendor::kUnknown;
  }
}

bool PciDevice::IsGpu() const {
  return vendor() != Vendor::kUnknown &&
         (base_class() == kPciBaseClassDisplay || base_class() == kPciBaseClassAccelerator);
}

bool PciDevice::IsNvSwitch() const {
  return vendor_id == kPciVendorNvidia && (class_code >> 8) == (kPciClassNvSwitch >> 8);
}

bool IsAcceleratorCandidate(uint16_t vendor_id, uint32_t class_code) {
  PciDevice device{.vendor_id = vendor_id, .class_code = class_code};
  return device.IsGpu() || device.IsNvSwitch();
}

bool IsPciAddress(absl::string_view name) {
  // dddd[d]:bb:dd.f; VMD domains have five hex digits.
  const size_t first_colon = name.find(':');
  if (first_colon == absl::string_view::npos || first_colon < 4) return false;
  if (name.size() != first_colon + 8) return false;
  absl::string_view rest = name.substr(first_colon);
  return IsLowerHex(name.substr(0, first_colon)) && rest[0] == ':' &&
         IsLowerHex(rest.substr(1, 2)) && rest[3] == ':' && IsLowerHex(rest.substr(4, 2)) &&
         rest[6] == '.' && rest[7] >= '0' && rest[7] <= '7';
}

absl::StatusOr<PciDevice> ReadPciDevice(const std::string& device_dir, const std::string& address,
                                        std::vector<absl::Status>* problems) {
  auto path = [&](absl::string_view file) { return sysfs::Join(device_dir, file); };
  PciDevice device{.address = address};

  absl::StatusOr<uint64_t> vendor = ReadHexAttribute(path("vendor"), 16);
  if (!vendor.ok()) return vendor.status();
  device.vendor_id = static_cast<uint16_t>(*vendor);
  absl::StatusOr<uint64_t> id = ReadHexAttribute(path("device"), 16);
  if (!id.ok()) return id.status();
  device.device_id = static_cast<uint16_t>(*id);
  absl::StatusOr<uint64_t> class_code = ReadHexAttribute(path("class"), 24);
  if (!class_code.ok()) return class_code.status();
  device.class_code = static_cast<uint32_t>(*class_code);

  if (auto v = OptionalAttribute(ReadHexAttribute(path("subsystem_vendor"), 16), problems)) {
    device.subsystem_vendor_id = static_cast<uint16_t>(*v);
  }
  if (auto v = OptionalAttribute(ReadHexAttribute(path("subsystem_device"), 16), problems)) {
    device.subsystem_device_id = static_cast<uint16_t>(*v);
  }
  if (auto v = OptionalAttribute(ReadHexAttribute(path("revision"), 8), problems)) {
    device.revision = static_cast<uint8_t>(*v);
  }
  if (auto numa = SmallInt(OptionalAttribute(sysfs::ReadInt(path("numa_node")), problems));
      numa && *numa >= 0) {
    device.numa_node = *numa;
  }
  device.sriov_totalvfs =
      SmallInt(OptionalAttribute(sysfs::ReadInt(path("sriov_totalvfs")), problems));
  if (auto driver = OptionalAttribute(sysfs::LinkBasename(path("driver")), problems)) {
    device.driver = *driver;
  }
  if (auto group = OptionalAttribute(sysfs::LinkBasename(path("iommu_group")), problems)) {
    device.iommu_group = SmallInt(sysfs::ParseInt(*group));
    device.iommu_group_type = sysfs::ReadOptionalString(path("iommu_group/type")).value_or("");
  }
  device.local_cpulist = sysfs::ReadOptionalString(path("local_cpulist")).value_or("");
  return device;
}

absl::StatusOr<PciInventory> DiscoverPci(const std::string& sysfs_root) {
  const std::string bus = sysfs::Join(sysfs_root, "bus/pci/devices");
  absl::StatusOr<std::vector<std::string>> names = sysfs::ListDir(bus);
  if (!names.ok()) return names.status();

  PciInventory inventory;
  for (const std::string& name : *names) {
    if (!IsPciAddress(name)) continue;
    const std::string dir = sysfs::Join(bus, name);
    // Vendor and class first: most of a server's devices are not ours and cost no more.
    absl::StatusOr<uint64_t> vendor = ReadHexAttribute(sysfs::Join(dir, "vendor"), 16);
    if (!vendor.ok()) {
      if (!absl::IsNotFound(vendor.status()) || sysfs::Exists(dir)) {
        inventory.errors.push_back(vendor.status());
      }  // else the device was removed while we listed: not an error.
      continue;
    }
    const uint16_t vendor_id = static_cast<uint16_t>(*vendor);
    if (vendor_id != kPciVendorNvidia && vendor_id != kPciVendorAmd &&
        vendor_id != kPciVendorIntel) {
      continue;
    }
    absl::StatusOr<uint64_t> class_code = ReadHexAttribute(sysfs::Join(dir, "class"), 24);
    if (!class_code.ok()) {
      inventory.errors.push_back(class_code.status());
      continue;
    }
    if (!IsAcceleratorCandidate(vendor_id, static_cast<uint32_t>(*class_code))) continue;
    absl::StatusOr<PciDevice> device = ReadPciDevice(dir, name, &inventory.errors);
    if (!device.ok()) {
      inventory.errors.push_back(device.status());
      continue;
    }
    inventory.devices.push_back(*std::move(device));
  }
  return inventory;
}

std::vector<PciDevice> PciInventory::Gpus(Vendor vendor) const {
  std::vector<PciDevice> gpus;
  for (const PciDevice& device : devices) {
    if (device.IsGpu() && device.vendor() == vendor) gpus.push_back(device);
  }
  return gpus;
}

std::vector<PciDevice> PciInventory::Gpus() const {
  std::vector<PciDevice> gpus;
  for (const PciDevice& device : devices) {
    if (device.IsGpu()) gpus.push_back(device);
  }
  return gpus;
}

int PciInventory::GpuCount(Vendor vendor) const {
  return static_cast<int>(std::count_if(devices.begin(), devices.end(), [&](const PciDevice& d) {
    return d.IsGpu() && d.vendor() == vendor;
  }));
}

std::vector<PciDevice> PciInventory::NvSwitches() const {
  std::vector<PciDevice> switches;
  for (const PciDevice& device : devices) {
    if (device.IsNvSwitch()) switches.push_back(device);
  }
  return switches;
}

int PciInventory::NvSwitchCount() const {
  return static_cast<int>(std::count_if(devices.begin(), devices.end(),
                                        [](const PciDevice& d) { return d.IsNvSwitch(); }));
}

const PciDevice* PciInventory::Find(absl::string_view address) const {
  for (const PciDevice& device : devices) {
    if (device.address == address) return &device;
  }
  return nullptr;
}

}  // namespace gpuop::hw
