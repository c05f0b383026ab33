#include "hw/amd/amd_names.h"

#include "absl/strings/str_format.h"

namespace gpuop::hw {

std::string GfxTargetName(uint32_t version) {
  const uint32_t major = version / 10000, minor = (version / 100) % 100, stepping = version % 100;
  if (major == 0 || minor > 15 || stepping > 15) return "";
  return absl::StrFormat("gfx%u%x%x", major, minor, stepping);
}

std::string AmdInstinctProductName(uint16_t device_id) {
  switch (device_id) {
    case 0x738c:
      return "AMD Instinct MI100";
    case 0x7408:
      return "AMD Instinct MI250X";
    case 0x740c:
      return "AMD Instinct MI250X / MI250";
    case 0x740f:
      return "AMD Instinct MI210";
    case 0x74a0:
      return "AMD Instinct MI300A";
    case 0x74a1:
      return "AMD Instinct MI300X";
    case 0x74a2:
    case 0x74b6:
      return "AMD Instinct MI308X";
    case 0x74a5:
      return "AMD Instinct MI325X";
    case 0x74a8:
      return "AMD Instinct MI308X HF";
    case 0x74a9:
    case 0x74bd:
      return "AMD Instinct MI300X HF";
    case 0x74b5:
      return "AMD Instinct MI300X VF";
    case 0x75a0:
      return "AMD Instinct MI350X";
    case 0x75a3:
      return "AMD Instinct MI355X";
    case 0x75b0:
      return "AMD Instinct MI350X VF";
    case 0x75b3:
      return "AMD Instinct MI355X VF";
    default:
      return "";
  }
}

std::string AmdFamilyName(uint32_t version) {
  switch (version) {
    // GFX9 discrete GPUs: Vega 10/12/20, MI100, MI200, MI300, MI350.
    case 90000:
    case 90004:
    case 90006:
    case 90008:
    case 90010:
    case 90400:
    case 90401:
    case 90402:
    case 90500:
      return "AI";
    // RDNA 1 and 2 discrete GPUs (Navi 1x, 2x).
    case 100100:
    case 100101:
    case 100102:
    case 100300:
    case 100301:
    case 100302:
    case 100304:
      return "NV";
    // RDNA 3 discrete GPUs (Navi 31, 32, 33).
    case 110000:
    case 110001:
    case 110002:
      return "GC_11_0_0";
    // RDNA 4 discrete GPUs (Navi 44, 48).
    case 120000:
    case 120001:
      return "GC_12_0_0";
    default:
      return "";
  }
}

}  // namespace gpuop::hw
