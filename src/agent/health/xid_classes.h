#ifndef GPUOP_AGENT_HEALTH_XID_CLASSES_H_
#define GPUOP_AGENT_HEALTH_XID_CLASSES_H_

// What an XID asks of the node, by class, as NVIDIA's XID catalogue resolves each XID (the
// resolution buckets NVSentinel's xiderrorsmapping.csv carries, XIDs 1 to 162):
//
//   Ignore          IGNORE: informational, nothing to do (43, 63, 92, ...)
//   RestartApp      RESTART_APP (and XID 45's workflow): the application failed, the GPU is fine
//                   (13, 31, 68, 94, the copy and video engines)
//   ResetGpu        RESET_GPU, XID 48's double-bit ECC workflow and the NVLink workflows (74,
//                   144-150): the GPU needs a reset (or a driver reload) before it is used again
//   RebootNode      RESTART_BM / RESTART_VM: only a reboot clears it (79 fallen off the bus, 151,
//                   160)
//   ContactSupport  UNEXPECTED_ERR_REPORT_ISSUE, CHECK_MECHANICALS, UPDATE_SWFW, CHECK_UVM, and
//                   every XID the catalogue does not list: a person has to look
//
// Only ResetGpu, RebootNode and ContactSupport make a GPU unhealthy; each ends when its action has
// happened (tracker.h), never because time passed. XID 154 (recovery action changed) defers to
// NVML's recovery-action field, which the samples read.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpuop::agent {

// Ordered by how much it takes: the larger action also does what the smaller ones do.
enum class XidAction { kIgnore, kRestartApp, kResetGpu, kRebootNode, kContactSupport };

// "Ignore", "RestartApp", "ResetGpu", "RebootNode", "ContactSupport".
const char* XidActionName(XidAction action);
std::optional<XidAction> ParseXidAction(absl::string_view name);
// Whether a GPU with this action pending is unhealthy (ResetGpu and above).
inline bool MarksUnhealthy(XidAction a) { return a >= XidAction::kResetGpu; }

// The catalogue's class of `xid`; ContactSupport for an XID it does not list.
XidAction CatalogueXidAction(uint64_t xid);

// The catalogue with a cluster's overrides (the policy's components.health.xidActions).
class XidClassTable {
 public:
  XidClassTable() = default;
  explicit XidClassTable(std::map<uint64_t, XidAction> overrides)
      : overrides_(std::move(overrides)) {}

  XidAction Lookup(uint64_t xid) const;
  const std::map<uint64_t, XidAction>& overrides() const { return overrides_; }

 private:
  std::map<uint64_t, XidAction> overrides_;
};

// Parses "109=RestartApp,74=RebootNode" (the agent's --xid-actions). InvalidArgument naming the
// entry and what is wrong with it.
absl::StatusOr<std::map<uint64_t, XidAction>> ParseXidActions(absl::string_view text);

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_HEALTH_XID_CLASSES_H_
