#ifndef GPUOP_HW_AMD_AMD_LABELS_H_
#define GPUOP_HW_AMD_AMD_LABELS_H_

#include <map>
#include <string>
#include <vector>

#include "hw/amd/amd_accelerator.h"
#include "hw/model.h"

// Node labels compatible with AMD's k8s-node-labeller (ROCm/k8s-device-plugin), so workloads and
// node selectors written for it work unchanged.
namespace gpuop::hw {

inline constexpr char kAmdLabelPrefix[] = "amd.com/gpu.";
inline constexpr char kAmdBetaLabelPrefix[] = "beta.amd.com/gpu.";

// The labeller's labels for the node's AMD GPUs, keyed by full label name:
//   family              AmdGpuInfo::family ("AI")
//   device-id           the PCI device id in 4 lower-case hex digits ("74a1")
//   product-name        Gpu::product with spaces as "_" and parentheses dropped
//                       ("AMD_Instinct_MI300X_OAM")
//   vram                KFD's memory bank size (else Gpu::memory_bytes) in GiB, rounded: "192G"
//   cu-count            KFD simd_count / simd_per_cu ("304")
//   simd-count          KFD simd_count ("1216")
// When every GPU that reports a property has the same value the label is
// "amd.com/gpu.<name>=<value>"; when they differ, one counter label per value,
// "amd.com/gpu.<name>.<value>=<count>". The labeller's experimental mirror
// "beta.amd.com/gpu.<name>.<value>=<count>" is written for every value, with
// "beta.amd.com/gpu.<name>=<value>" as well when all agree. A property no GPU reports gets no
// label. Then, for the node:
//   amd.com/gpu.driver-version       Inventory::driver_version ("" for the in-tree driver)
//   amd.com/gpu.driver-src-version   `driver_src_version` (the module's srcversion, or "")
//   amd.com/compute-memory-partition "<compute>_<memory>" ("spx_nps1") when the GPUs that
//                                    report partitions are all in one mode
//   amd.com/compute-partitioning-supported, amd.com/memory-partitioning-supported
//                                    "true"/"false" for the first GPU
//
// `amd` is matched to `inventory.gpus` by index (as DiscoverAmd returns them); a GPU without
// an entry contributes only what Gpu carries (product-name, vram). Values are made valid
// Kubernetes label values (other characters become "_", at most 63) where the labeller would
// have produced an invalid one; its firmware labels are not produced. Pure; thread-safe.
std::map<std::string, std::string> AmdNodeLabels(const Inventory& inventory,
                                                 const std::vector<AmdGpuInfo>& amd,
                                                 const std::string& driver_src_version = "");
std::map<std::string, std::string> AmdNodeLabels(const AmdDiscovery& discovery);

}  // namespace gpuop::hw

#endif  // GPUOP_HW_AMD_AMD_LABELS_H_
