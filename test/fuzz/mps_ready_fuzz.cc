// The MPS daemons' ready file, which the device plugin reads from the host's MPS root.
#include <cstddef>
#include <cstdint>

#include "agent/mps/root.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const gpuop::agent::mps::ReadyResources ready =
      gpuop::agent::mps::ParseReady({reinterpret_cast<const char*>(data), size});
  // What parses formats back to what parses the same.
  if (gpuop::agent::mps::ParseReady(gpuop::agent::mps::FormatReady(ready)) != ready)
    __builtin_trap();
  return 0;
}
