#ifndef GPUOP_TEST_FAKES_NVML_IDS_H_
#define GPUOP_TEST_FAKES_NVML_IDS_H_

// Identifiers in the formats the real driver uses: PCI bus ids and UUIDs, and deterministic
// derivation of UUIDs and serial numbers from a key so that a scenario reads the same every run.

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "test/fakes/nvml/scenario.h"

namespace gpuop::fakenvml {

// 64-bit FNV-1a; stable across builds and platforms.
uint64_t Fnv1a64(absl::string_view data, uint64_t basis = 0xcbf29ce484222325ULL);

// A lowercase 8-4-4-4-12 UUID body (no prefix) derived from `key`.
std::string DerivedUuid(absl::string_view key);

// A 13-digit serial number derived from `key`.
std::string DerivedSerial(absl::string_view key);

// NVML's busId: "%08X:%02X:%02X.0".
std::string FormatBusId(const PciAddress& pci);
// NVML's busIdLegacy: "%04X:%02X:%02X.0".
std::string FormatLegacyBusId(const PciAddress& pci);

// Accepts "dddd:bb:dd.f" and "dddddddd:bb:dd.f" in either case (sysfs or NVML form) and also
// "bb:dd.f" (domain 0). The function must be 0.
std::optional<PciAddress> ParseBusId(absl::string_view text);

}  // namespace gpuop::fakenvml

#endif  // GPUOP_TEST_FAKES_NVML_IDS_H_
