#ifndef GPUOP_AGENT_HEALTH_XID_CHECKS_H_
#define GPUOP_AGENT_HEALTH_XID_CHECKS_H_

// Which XIDs make a GPU unhealthy, settable as NVIDIA's device plugin lets it be set:
//   - the application errors are ignored by default (13, 31, 43, 45, 68, 109);
//   - --ignore-xids adds to them, or replaces them with --replace-default-ignored-xids;
//   - DP_DISABLE_HEALTHCHECKS: "all" or a value containing "xids" turns every XID check off, a
//     comma-separated list of XIDs adds them to the ignored ones;
//   - DP_ENABLE_HEALTHCHECKS: a list of XIDs checked whatever the settings above say (also when
//     every check is off), "all" checks every XID, the default ignored ones too.
// Entries of the variables that are no XID are skipped with a warning, as NVIDIA's plugin skips
// them.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gpuop::agent {

inline const std::set<uint64_t> kDefaultIgnoredXids = {13, 31, 43, 45, 68, 109};

struct XidChecks {
  // Every XID check off, but for `enabled`.
  bool all_off = false;
  std::set<uint64_t> ignored;  // while !all_off
  std::set<uint64_t> enabled;  // checked whatever else says
  // Entries of the variables that were skipped, for a warning naming them.
  std::vector<std::string> skipped;

  bool Ignored(uint64_t xid) const;
};

struct XidCheckSettings {
  std::vector<uint64_t> ignore_xids;     // --ignore-xids
  bool replace_default_ignored = false;  // --replace-default-ignored-xids
  std::optional<std::string> disable;    // DP_DISABLE_HEALTHCHECKS
  std::optional<std::string> enable;     // DP_ENABLE_HEALTHCHECKS
};

// The XID checks `settings` ask for. Pure; never throws.
XidChecks ResolveXidChecks(const XidCheckSettings& settings);

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_HEALTH_XID_CHECKS_H_
