#include "agent/cdi/spec.h"

#include <array>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gpuop::agent::cdi {
namespace {

constexpr std::array<CdiVersion, 10> kKnownVersions = {{{0, 1, 0},
                                                        {0, 2, 0},
                                                        {0, 3, 0},
                                                        {0, 4, 0},
                                                        {0, 5, 0},
                                                        {0, 6, 0},
                                                        {0, 7, 0},
                                                        {0, 8, 0},
                                                        {1, 0, 0},
                                                        {1, 1, 0}}};

bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Every ContainerEdits of the spec: the spec-wide one and each device's.
std::vector<const ContainerEdits*> AllEdits(const Spec& spec) {
  std::vector<const ContainerEdits*> edits = {&spec.container_edits};
  for (const Device& device : spec.devices) edits.push_back(&device.container_edits);
  return edits;
}

bool RequiresV110(const Spec& spec) {
  for (const ContainerEdits* edits : AllEdits(spec)) {
    if (!edits->net_devices.empty()) return true;
  }
  return false;
}

bool RequiresV070(const Spec& spec) {
  for (const ContainerEdits* edits : AllEdits(spec)) {
    if (!edits->additional_gids.empty()) return true;
  }
  return false;
}

bool RequiresV060(const Spec& spec) {
  if (!spec.annotations.empty()) return true;
  for (const Device& device : spec.devices) {
    if (!device.annotations.empty()) return true;
  }
  // Dots in the class part of the kind: the vendor part is everything before the first '/'.
  const size_t slash = spec.kind.find('/');
  return slash != std::string::npos && slash > 0 &&
         spec.kind.find('.', slash + 1) != std::string::npos;
}

bool RequiresV050(const Spec& spec) {
  for (const Device& device : spec.devices) {
    if (!device.name.empty() && !IsAsciiLetter(device.name[0])) return true;
  }
  for (const ContainerEdits* edits : AllEdits(spec)) {
    for (const DeviceNode& node : edits->device_nodes) {
      if (!node.host_path.empty()) return true;
    }
  }
  return false;
}

bool RequiresV040(const Spec& spec) {
  for (const ContainerEdits* edits : AllEdits(spec)) {
    for (const Mount& mount : edits->mounts) {
      if (!mount.type.empty()) return true;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<CdiVersion> ParseCdiVersion(absl::string_view text) {
  absl::string_view rest = text;
  absl::ConsumePrefix(&rest, "v");
  const std::vector<absl::string_view> parts = absl::StrSplit(rest, '.');
  CdiVersion version;
  if (parts.size() != 3 || !absl::SimpleAtoi(parts[0], &version.major) ||
      !absl::SimpleAtoi(parts[1], &version.minor) || !absl::SimpleAtoi(parts[2], &version.patch) ||
      version.major < 0 || version.minor < 0 || version.patch < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("CDI version \"", text, "\": expected MAJOR.MINOR.PATCH such as 0.5.0"));
  }
  return version;
}

bool IsKnownCdiVersion(const CdiVersion& version) {
  for (const CdiVersion& known : kKnownVersions) {
    if (known == version) return true;
  }
  return false;
}

std::string MinimumCdiVersion(const Spec& spec) {
  if (RequiresV110(spec)) return "1.1.0";
  if (RequiresV070(spec)) return "0.7.0";
  if (RequiresV060(spec)) return "0.6.0";
  if (RequiresV050(spec)) return "0.5.0";
  if (RequiresV040(spec)) return "0.4.0";
  return kOldestCdiVersion;
}

}  // namespace gpuop::agent::cdi
