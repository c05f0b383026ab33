// The device plugin's configuration, from a ConfigMap a person writes.
#include <cstddef>
#include <cstdint>

#include "agent/deviceplugin/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)gpuop::agent::ParseDevicePluginConfig({reinterpret_cast<const char*>(data), size}, "fuzz");
  return 0;
}
