#include "hw/mig_profile.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gpuop::hw {

MigProfileName ParseMigProfileName(std::string_view name) {
  const size_t dot = name.find('.');
  if (dot != std::string_view::npos && dot >= 2 && name[dot - 1] == 'c') {
    unsigned int slices = 0;
    if (absl::SimpleAtoi(absl::string_view(name.data(), dot - 1), &slices) && slices > 0) {
      return {.compute_slices = slices, .gpu_instance = std::string(name.substr(dot + 1))};
    }
  }
  return {.compute_slices = std::nullopt, .gpu_instance = std::string(name)};
}

std::string MigDeviceProfile(const MigDevice& device) {
  if (device.has_attributes && device.compute_instance_slices > 0 &&
      device.compute_instance_slices < device.gpu_instance_slices && !device.profile.empty()) {
    return absl::StrCat(device.compute_instance_slices, "c.", device.profile);
  }
  return device.profile;
}

}  // namespace gpuop::hw
