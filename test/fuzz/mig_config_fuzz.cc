// The MIG layouts (mig-parted's format), from a ConfigMap a person writes.
#include <cstddef>
#include <cstdint>

#include "agent/mig/mig_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)gpuop::agent::mig::ParseMigConfig({reinterpret_cast<const char*>(data), size}, "fuzz");
  return 0;
}
