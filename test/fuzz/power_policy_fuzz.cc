// The power manager's policy file, rendered from the policy and pools a person writes.
#include <cstddef>
#include <cstdint>

#include "agent/power/power_policy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)gpuop::agent::power::ParsePowerPolicy({reinterpret_cast<const char*>(data), size}, "fuzz");
  return 0;
}
