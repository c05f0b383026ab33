#ifndef GPUOP_HW_AMD_AMD_NAMES_H_
#define GPUOP_HW_AMD_AMD_NAMES_H_

#include <cstdint>
#include <string>

// Names of AMD GPUs derived from numbers the kernel reports. Pure functions; thread-safe.
namespace gpuop::hw {

// The LLVM target name for KFD's gfx_target_version, which packs major * 10000 + minor * 100 +
// stepping; minor and stepping are printed as one hex digit each: 90010 -> "gfx90a",
// 90402 -> "gfx942", 100300 -> "gfx1030", 110501 -> "gfx1151". "" for 0 (a CPU node) and for
// numbers that cannot be a target (minor or stepping above 15).
std::string GfxTargetName(uint32_t gfx_target_version);

// The marketing name of a known Instinct device id, as libdrm's amdgpu.ids lists it
// (0x74a1 -> "AMD Instinct MI300X"); "" for any other id.
std::string AmdInstinctProductName(uint16_t device_id);

// The amdgpu family (libdrm's AMDGPU_FAMILY_* in the k8s-node-labeller's spelling: "AI", "NV",
// "GC_11_0_0", ...) of a discrete-GPU gfx target; "" for targets whose family depends on more
// than the target (APUs) or is not known here.
std::string AmdFamilyName(uint32_t gfx_target_version);

}  // namespace gpuop::hw

#endif  // GPUOP_HW_AMD_AMD_NAMES_H_
