#include "agent/health/xid_classes.h"

#include <array>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gpuop::agent {
namespace {

struct Range {
  uint64_t first, last;
  XidAction action;
};

// The catalogue's resolution of every XID it lists that needs no person, as inclusive ranges
// (XIDs 1 to 162). The rest of 1..162, and every XID above, is ContactSupport.
constexpr Range kCatalogue[] = {
    {8, 8, XidAction::kRestartApp},
    {11, 11, XidAction::kRestartApp},
    {13, 13, XidAction::kRestartApp},
    {14, 14, XidAction::kIgnore},
    {25, 25, XidAction::kRestartApp},
    {31, 32, XidAction::kRestartApp},
    {37, 38, XidAction::kIgnore},
    {39, 41, XidAction::kRestartApp},
    {43, 44, XidAction::kIgnore},
    {45, 45, XidAction::kRestartApp},  // preemptive cleanup
    {46, 46, XidAction::kResetGpu},
    {48, 48, XidAction::kResetGpu},  // double-bit ECC
    {60, 60, XidAction::kRestartApp},
    {62, 62, XidAction::kResetGpu},
    {63, 63, XidAction::kIgnore},
    {64, 64, XidAction::kResetGpu},
    {66, 67, XidAction::kIgnore},
    {68, 72, XidAction::kRestartApp},
    {74, 74, XidAction::kResetGpu},  // NVLink error
    {75, 77, XidAction::kRestartApp},
    {79, 79, XidAction::kRebootNode},  // off the bus
    {80, 80, XidAction::kRestartApp},
    {82, 86, XidAction::kRestartApp},
    {88, 89, XidAction::kRestartApp},
    {92, 93, XidAction::kIgnore},
    {94, 94, XidAction::kRestartApp},  // contained ECC error
    {95, 95, XidAction::kResetGpu},    // uncontained ECC error
    {96, 105, XidAction::kRestartApp},
    {106, 107, XidAction::kIgnore},
    {109, 110, XidAction::kResetGpu},
    {119, 120, XidAction::kResetGpu},  // GSP
    {121, 121, XidAction::kIgnore},
    {126, 135, XidAction::kRestartApp},
    {136, 136, XidAction::kResetGpu},
    {137, 137, XidAction::kIgnore},
    {139, 139, XidAction::kRestartApp},
    {140, 140, XidAction::kResetGpu},
    {141, 141, XidAction::kIgnore},
    {143, 143, XidAction::kResetGpu},
    {144, 150, XidAction::kResetGpu},    // NVLink 5 errors
    {151, 151, XidAction::kRebootNode},  // key rotation: restart the VM
    {152, 153, XidAction::kIgnore},
    // Recovery action changed: the action itself is NVML's recovery-action field (sampled).
    {154, 154, XidAction::kIgnore},
    {155, 156, XidAction::kResetGpu},
    {157, 157, XidAction::kIgnore},
    {158, 158, XidAction::kResetGpu},
    {160, 160, XidAction::kRebootNode},
    {161, 161, XidAction::kIgnore},
    {162, 162, XidAction::kResetGpu},
};

constexpr std::array<std::pair<XidAction, const char*>, 5> kNames = {{
    {XidAction::kIgnore, "Ignore"},
    {XidAction::kRestartApp, "RestartApp"},
    {XidAction::kResetGpu, "ResetGpu"},
    {XidAction::kRebootNode, "RebootNode"},
    {XidAction::kContactSupport, "ContactSupport"},
}};

}  // namespace

const char* XidActionName(XidAction action) {
  for (const auto& [a, name] : kNames) {
    if (a == action) return name;
  }
  return "ContactSupport";
}

std::optional<XidAction> ParseXidAction(absl::string_view name) {
  for (const auto& [a, n] : kNames) {
    if (name == n) return a;
  }
  return std::nullopt;
}

XidAction CatalogueXidAction(uint64_t xid) {
  for (const Range& r : kCatalogue) {
    if (xid >= r.first && xid <= r.last) return r.action;
  }
  return XidAction::kContactSupport;
}

XidAction XidClassTable::Lookup(uint64_t xid) const {
  auto it = overrides_.find(xid);
  return it == overrides_.end() ? CatalogueXidAction(xid) : it->second;
}

absl::StatusOr<std::map<uint64_t, XidAction>> ParseXidActions(absl::string_view text) {
  std::map<uint64_t, XidAction> out;
  for (absl::string_view entry : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    entry = absl::StripAsciiWhitespace(entry);
    const std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(entry, '=');
    uint64_t xid = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(kv.first), &xid)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "xid actions: \"", entry, "\": expected <XID>=<action>, like 109=RestartApp"));
    }
    const std::optional<XidAction> action = ParseXidAction(absl::StripAsciiWhitespace(kv.second));
    if (!action.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "xid actions: \"", entry,
          "\": the action must be Ignore, RestartApp, ResetGpu, RebootNode or ContactSupport"));
    }
    out[xid] = *action;
  }
  return out;
}

}  // namespace gpuop::agent
