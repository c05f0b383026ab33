#ifndef GPUOP_HW_MIG_PROFILE_H_
#define GPUOP_HW_MIG_PROFILE_H_

#include <optional>
#include <string>
#include <string_view>

#include "hw/model.h"

namespace gpuop::hw {

// MIG profile names as NVIDIA spells them (nvidia-smi, mig-parted, GPU feature discovery, the
// device plugin): "<g>g.<mem>gb" for a GPU instance with one compute instance filling it, and
// "<c>c.<g>g.<mem>gb" for a compute instance of c slices in such a GPU instance ("2c.4g.20gb").

// A profile name split into the compute slices it states (none: the whole GPU instance) and the
// GPU-instance profile: "2c.4g.20gb" -> {2, "4g.20gb"}; "3g.20gb" -> {nullopt, "3g.20gb"}.
struct MigProfileName {
  std::optional<unsigned int> compute_slices;
  std::string gpu_instance;
};
MigProfileName ParseMigProfileName(std::string_view name);

// The name of a MIG device: "<c>c.<profile>" when the attributes say its compute instance has
// fewer slices than its GPU instance, else the GPU instance's profile (`device.profile`).
std::string MigDeviceProfile(const MigDevice& device);

}  // namespace gpuop::hw

#endif  // GPUOP_HW_MIG_PROFILE_H_
