#include "hw/pci/nfd_labels.h"

#include <algorithm>
#include <array>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace gpuop::hw {
namespace {

// NFD's mandatoryDevAttrs order, which is also the order of the label's parts.
constexpr std::array<NfdPciField, 5> kFieldOrder = {
    NfdPciField::kClass, NfdPciField::kVendor, NfdPciField::kDevice, NfdPciField::kSubsystemVendor,
    NfdPciField::kSubsystemDevice};

std::string Hex4(uint16_t value) { return absl::StrFormat("%04x", value); }

std::optional<std::string> FieldValue(const PciDevice& device, NfdPciField field) {
  switch (field) {
    case NfdPciField::kClass:
      return Hex4(device.class4());
    case NfdPciField::kVendor:
      return Hex4(device.vendor_id);
    case NfdPciField::kDevice:
      return Hex4(device.device_id);
    case NfdPciField::kSubsystemVendor:
      if (!device.subsystem_vendor_id) return std::nullopt;
      return Hex4(*device.subsystem_vendor_id);
    case NfdPciField::kSubsystemDevice:
      if (!device.subsystem_device_id) return std::nullopt;
      return Hex4(*device.subsystem_device_id);
  }
  return std::nullopt;
}

}  // namespace

NfdPciConfig NfdPciConfig::NvidiaGpuOperator() {
  return {.device_class_whitelist = {"02", "0200", "0207", "0300", "0302"},
          .device_label_fields = {NfdPciField::kVendor}};
}

std::map<std::string, std::string> NfdPciLabels(const PciInventory& inventory,
                                                const NfdPciConfig& config) {
  std::vector<NfdPciField> fields;
  for (NfdPciField field : kFieldOrder) {
    if (std::find(config.device_label_fields.begin(), config.device_label_fields.end(), field) !=
        config.device_label_fields.end()) {
      fields.push_back(field);
    }
  }
  if (fields.empty()) fields = {NfdPciField::kClass, NfdPciField::kVendor};

  std::map<std::string, std::string> labels;
  for (const PciDevice& device : inventory.devices) {
    // NFD drops a device whose mandatory attributes are not all readable.
    if (!device.subsystem_vendor_id || !device.subsystem_device_id) continue;
    const std::string class4 = Hex4(device.class4());
    const bool whitelisted =
        std::any_of(config.device_class_whitelist.begin(), config.device_class_whitelist.end(),
                    [&](const std::string& prefix) {
                      return absl::StartsWith(class4, absl::AsciiStrToLower(prefix));
                    });
    if (!whitelisted) continue;
    std::vector<std::string> parts;
    for (NfdPciField field : fields) parts.push_back(*FieldValue(device, field));
    const std::string name = absl::StrCat(kNfdLabelPrefix, "pci-", absl::StrJoin(parts, "_"));
    labels[absl::StrCat(name, ".present")] = "true";
    if (device.sriov_totalvfs) labels[absl::StrCat(name, ".sriov.capable")] = "true";
  }
  return labels;
}

}  // namespace gpuop::hw
