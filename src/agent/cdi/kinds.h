#ifndef GPUOP_AGENT_CDI_KINDS_H_
#define GPUOP_AGENT_CDI_KINDS_H_

// The CDI kinds ("<vendor>/<class>") gpuop's specs define, and the NVIDIA spec's file name. Header
// only: the device plugin names devices of these kinds in Allocate without linking the spec
// generators.
//
// gpuop never defines kind nvidia.com/gpu. NVIDIA's container toolkit (>= 1.18, the
// nvidia-cdi-refresh service) writes /var/run/cdi/nvidia.yaml with that kind and device names
// "<index>", "GPU-<uuid>" and "all"; the CDI cache drops a device defined twice at one priority,
// and containerd then fails every container that asks for it. NVIDIA's own components use kinds
// of their own for the same reason (k8s.device-plugin.nvidia.com/gpu,
// management.nvidia.com/gpu). The vendor part is a DNS subdomain of gpuop.io, so it stays
// valid under every CDI spec version (dots in the class need 0.6.0; in the vendor they are
// always allowed).
namespace gpuop::agent::cdi {

inline constexpr char kNvidiaCdiVendor[] = "nvidia.gpuop.io";
inline constexpr char kNvidiaCdiClass[] = "gpu";
inline constexpr char kNvidiaCdiKind[] = "nvidia.gpuop.io/gpu";
// The file of gpuop's NVIDIA spec in the CDI directory (/var/run/cdi).
inline constexpr char kNvidiaSpecFileName[] = "gpuop-nvidia.json";

// gpuop's management spec (management.h): what gpuop's own components get their GPUs from.
inline constexpr char kManagementCdiVendor[] = "management.gpuop.io";
inline constexpr char kManagementCdiClass[] = "gpu";
inline constexpr char kManagementCdiKind[] = "management.gpuop.io/gpu";
inline constexpr char kManagementSpecFileName[] = "gpuop-management.json";
// Its two devices, fully qualified.
inline constexpr char kManagementAllDevice[] = "management.gpuop.io/gpu=all";
inline constexpr char kManagementMigMonitorDevice[] = "management.gpuop.io/gpu=mig-monitor";
// The container variable gpuop-container-runtime reads the devices to apply from.
inline constexpr char kCdiDevicesVariable[] = "GPUOP_CDI_DEVICES";

}  // namespace gpuop::agent::cdi

#endif  // GPUOP_AGENT_CDI_KINDS_H_
