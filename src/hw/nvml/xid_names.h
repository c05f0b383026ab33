#ifndef GPUOP_HW_NVML_XID_NAMES_H_
#define GPUOP_HW_NVML_XID_NAMES_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace gpuop::hw {

// The name NVIDIA's XID catalogue gives an XID ("GPU has fallen off the bus" for 79), for the
// XIDs whose meaning operators act on; "" for one this table does not name. dcgm-exporter puts
// the same kind of text in DCGM_FI_DEV_XID_ERRORS's err_msg label.
absl::string_view XidName(uint64_t xid);

}  // namespace gpuop::hw

#endif  // GPUOP_HW_NVML_XID_NAMES_H_
