#include "agent/health/xid_checks.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gpuop::agent {
namespace {

// A variable's list: "all" (or, for DP_DISABLE_HEALTHCHECKS, anything with "xids") and XIDs.
struct XidList {
  bool all = false;
  std::set<uint64_t> xids;
};

XidList ParseList(const std::optional<std::string>& value, bool xids_means_all,
                  std::vector<std::string>& skipped) {
  XidList out;
  if (!value.has_value()) return out;
  const std::string lower = absl::AsciiStrToLower(*value);
  for (absl::string_view entry : absl::StrSplit(lower, ',')) {
    entry = absl::StripAsciiWhitespace(entry);
    if (entry.empty()) continue;
    uint64_t xid = 0;
    if (entry == "all" || (xids_means_all && absl::StrContains(entry, "xids"))) {
      out.all = true;
    } else if (absl::SimpleAtoi(entry, &xid)) {
      out.xids.insert(xid);
    } else {
      skipped.emplace_back(entry);
    }
  }
  return out;
}

}  // namespace

XidAction XidChecks::Action(uint64_t xid) const {
  const XidAction action = classes.Lookup(xid);
  const bool marks = MarksUnhealthy(action);
  if (enabled.contains(xid)) return marks ? action : XidAction::kResetGpu;
  if (all_off || ignored.contains(xid)) return marks ? XidAction::kIgnore : action;
  if (!marks && !class_ignores) return XidAction::kResetGpu;
  return action;
}

XidChecks ResolveXidChecks(const XidCheckSettings& settings) {
  XidChecks out{.classes = XidClassTable(settings.actions)};
  out.class_ignores = !settings.replace_default_ignored;
  out.ignored.insert(settings.ignore_xids.begin(), settings.ignore_xids.end());
  const XidList disable = ParseList(settings.disable, /*xids_means_all=*/true, out.skipped);
  const XidList enable = ParseList(settings.enable, /*xids_means_all=*/false, out.skipped);
  out.all_off = disable.all;
  out.ignored.insert(disable.xids.begin(), disable.xids.end());
  if (enable.all) {
    out.all_off = false;
    out.class_ignores = false;
    out.ignored.clear();
  }
  out.enabled = enable.xids;
  for (uint64_t xid : out.enabled) out.ignored.erase(xid);
  return out;
}

}  // namespace gpuop::agent
