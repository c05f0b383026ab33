#include "hw/model.h"

namespace gpuop::hw {

std::string VendorName(Vendor vendor) {
  switch (vendor) {
    case Vendor::kNvidia:
      return "nvidia";
    case Vendor::kAmd:
      return "amd";
    case Vendor::kIntel:
      return "intel";
    case Vendor::kUnknown:
      break;
  }
  return "unknown";
}

std::string LinkKindName(LinkKind kind) {
  switch (kind) {
    case LinkKind::kGpuFabric:
      return "gpu-fabric";
    case LinkKind::kSamePcieSwitch:
      return "pcie-switch";
    case LinkKind::kSameNumaNode:
      return "numa-node";
    case LinkKind::kCrossSocket:
      return "cross-socket";
  }
  return "unknown";
}

std::string HardwareEventKindName(HardwareEvent::Kind kind) {
  switch (kind) {
    case HardwareEvent::Kind::kXid:
      return "xid";
    case HardwareEvent::Kind::kDoubleBitEcc:
      return "double-bit-ecc";
    case HardwareEvent::Kind::kSingleBitEcc:
      return "single-bit-ecc";
    case HardwareEvent::Kind::kGpuLost:
      return "gpu-lost";
    case HardwareEvent::Kind::kUnwatched:
      return "unwatched";
  }
  return "unknown";
}

}  // namespace gpuop::hw
