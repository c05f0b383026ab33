#include "hw/nvml/xid_names.h"

#include <algorithm>
#include <iterator>

namespace gpuop::hw {
namespace {

struct Named {
  uint64_t xid;
  const char* name;
};

// Sorted by XID. Names as the catalogue (docs.nvidia.com/deploy/xid-errors) titles them.
constexpr Named kNames[] = {
    {8, "GPU stopped processing"},
    {13, "Graphics Engine Exception"},
    {31, "GPU memory page fault"},
    {32, "Invalid or corrupted push buffer stream"},
    {38, "Driver firmware error"},
    {43, "GPU stopped processing"},
    {45, "Preemptive cleanup, due to previous errors"},
    {48, "DBE (Double Bit Error) ECC Error"},
    {61, "Internal micro-controller breakpoint/warning"},
    {62, "Internal micro-controller halt"},
    {63, "ECC page retirement or row remapping recording event"},
    {64, "ECC page retirement or row remapper recording failure"},
    {68, "NVDEC0 Exception"},
    {69, "Graphics Engine class error"},
    {74, "NVLINK Error"},
    {79, "GPU has fallen off the bus"},
    {92, "High single-bit ECC error rate"},
    {94, "Contained ECC error"},
    {95, "Uncontained ECC error"},
    {109, "Context Switch Timeout Error"},
    {119, "GSP RPC Timeout"},
    {120, "GSP Error"},
    {121, "C2C Link corrected error"},
    {140, "Unrecovered ECC Error"},
    {143, "GPU Initialization Failure"},
    {144, "NVLINK: SAW Error"},
    {145, "NVLINK: RLW Error"},
    {146, "NVLINK: TLW Error"},
    {147, "NVLINK: TREX Error"},
    {148, "NVLINK: NVLPW_CTRL Error"},
    {149, "NVLINK: NETIR Error"},
    {150, "NVLINK: MSE Error"},
    {154, "GPU Recovery Action Changed"},
};

}  // namespace

absl::string_view XidName(uint64_t xid) {
  const auto* it = std::lower_bound(std::begin(kNames), std::end(kNames), xid,
                                    [](const Named& n, uint64_t x) { return n.xid < x; });
  return it != std::end(kNames) && it->xid == xid ? it->name : "";
}

}  // namespace gpuop::hw
