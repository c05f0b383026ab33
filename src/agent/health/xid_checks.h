#ifndef GPUOP_AGENT_HEALTH_XID_CHECKS_H_
#define GPUOP_AGENT_HEALTH_XID_CHECKS_H_

// Which XIDs make a GPU unhealthy and what each asks for, settable as NVIDIA's device plugin lets
// it be set, on top of the XID classes (xid_classes.h):
//   - the XIDs whose class is Ignore or RestartApp are ignored by default (the catalogue's
//     application and informational XIDs: 13, 31, 43, 45, 68 among them, as in NVIDIA's plugin;
//     109 is not: the catalogue resets the GPU for it, where NVIDIA's plugin ignores it);
//   - --ignore-xids adds to them, or replaces them with --replace-default-ignored-xids (then an
//     application XID makes its GPU unhealthy, needing a reset);
//   - DP_DISABLE_HEALTHCHECKS: "all" or a value containing "xids" turns every XID check off, a
//     comma-separated list of XIDs adds them to the ignored ones;
//   - DP_ENABLE_HEALTHCHECKS: a list of XIDs checked whatever the settings above say (also when
//     every check is off), "all" checks every XID, the default ignored ones too.
// Entries of the variables that are no XID are skipped with a warning, as NVIDIA's plugin skips
// them.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/health/xid_classes.h"

namespace gpuop::agent {

struct XidChecks {
  XidClassTable classes;
  // Every XID check off, but for `enabled`.
  bool all_off = false;
  // The XIDs whose class marks no GPU unhealthy count as ignored (the default).
  bool class_ignores = true;
  std::set<uint64_t> ignored;  // while !all_off, besides the classes'
  std::set<uint64_t> enabled;  // checked whatever else says
  // Entries of the variables that were skipped, for a warning naming them.
  std::vector<std::string> skipped;

  // What `xid` asks for under these checks: its class, Ignore for an ignored XID whose class
  // would mark the GPU, and at least ResetGpu for a checked XID whose class would not.
  XidAction Action(uint64_t xid) const;
  bool Ignored(uint64_t xid) const { return !MarksUnhealthy(Action(xid)); }
};

struct XidCheckSettings {
  std::map<uint64_t, XidAction> actions;  // --xid-actions: overrides of the catalogue
  std::vector<uint64_t> ignore_xids;      // --ignore-xids
  bool replace_default_ignored = false;   // --replace-default-ignored-xids
  std::optional<std::string> disable;     // DP_DISABLE_HEALTHCHECKS
  std::optional<std::string> enable;      // DP_ENABLE_HEALTHCHECKS
};

// The XID checks `settings` ask for. Pure; never throws.
XidChecks ResolveXidChecks(const XidCheckSettings& settings);

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_HEALTH_XID_CHECKS_H_
