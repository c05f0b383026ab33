#include "test/fakes/nvml/ids.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace gpuop::fakenvml {
namespace {

// snprintf rather than absl::StrFormat: the library links absl statically, and the archive member
// behind StrFormat is not position-independent on Debian (see CMakeLists.txt).
template <typename... Args>
std::string Format(const char* format, Args... args) {
  char buffer[64];
  const int length = std::snprintf(buffer, sizeof(buffer), format, args...);
  return std::string(buffer, length < 0 ? 0 : std::min<size_t>(length, sizeof(buffer) - 1));
}

}  // namespace

uint64_t Fnv1a64(absl::string_view data, uint64_t basis) {
  uint64_t hash = basis;
  for (const char c : data) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::string DerivedUuid(absl::string_view key) {
  const uint64_t high = Fnv1a64(key);
  const uint64_t low = Fnv1a64(key, high ^ 0x9e3779b97f4a7c15ULL);
  return Format("%08" PRIx64 "-%04" PRIx64 "-%04" PRIx64 "-%04" PRIx64 "-%012" PRIx64, high >> 32,
                (high >> 16) & 0xffff, high & 0xffff, low >> 48, low & 0xffffffffffffULL);
}

std::string DerivedSerial(absl::string_view key) {
  // Real serials are 13 decimal digits starting with 1 (e.g. 1654922001234).
  return Format("1%012" PRIu64, Fnv1a64(key) % 1000000000000ULL);
}

std::string FormatBusId(const PciAddress& pci) {
  return Format("%08X:%02X:%02X.0", pci.domain, pci.bus, pci.device);
}

std::string FormatLegacyBusId(const PciAddress& pci) {
  return Format("%04X:%02X:%02X.0", pci.domain, pci.bus, pci.device);
}

std::optional<PciAddress> ParseBusId(absl::string_view text) {
  const std::vector<absl::string_view> dot = absl::StrSplit(text, '.');
  if (dot.size() != 2 || dot[1] != "0") return std::nullopt;
  std::vector<absl::string_view> parts = absl::StrSplit(dot[0], ':');
  if (parts.size() == 2) parts.insert(parts.begin(), "0");
  if (parts.size() != 3) return std::nullopt;
  PciAddress pci;
  unsigned int* const out[] = {&pci.domain, &pci.bus, &pci.device};
  const unsigned int limit[] = {0xffffffffu, 0xffu, 0x1fu};
  for (int i = 0; i < 3; ++i) {
    if (parts[i].empty() || parts[i].size() > 8) return std::nullopt;
    uint32_t value = 0;
    if (!absl::SimpleHexAtoi(parts[i], &value) || value > limit[i]) return std::nullopt;
    if (parts[i].find_first_not_of("0123456789abcdefABCDEF") != absl::string_view::npos) {
      return std::nullopt;
    }
    *out[i] = value;
  }
  return pci;
}

}  // namespace gpuop::fakenvml
