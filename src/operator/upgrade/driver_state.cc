#include "operator/upgrade/driver_state.h"

#include "absl/strings/str_cat.h"
#include "operator/api/node_state.h"

namespace gpuop::op::upgrade {

bool DriverState::Current() const {
  return n_.update_revision.has_value() && n_.driver_pod.has_value() &&
         n_.driver_pod->owner == n_.driver_daemon_set &&
         n_.driver_pod->revision == *n_.update_revision;
}

bool DriverState::MovePending() const {
  return !n_.target_daemon_set.empty() && n_.driver_pod.has_value();
}

bool DriverState::Removing() const { return !n_.removal.empty(); }
bool DriverState::RemovalPending() const {
  return Removing() && n_.driver_deployed && n_.driver_pod.has_value();
}

bool DriverState::Removed() const {
  return Removing() && !n_.driver_deployed && !n_.driver_pod.has_value();
}

bool DriverState::SafeLoadWaiting() const {
  return n_.driver_pod.has_value() && n_.driver_pod->waits_for_safe_load && !n_.driver_pod->ready;
}

bool DriverState::UpToDate() const {
  return Current() && !MovePending() && !Removing() && !SafeLoadWaiting();
}

bool DriverState::Outdated() const {
  return (n_.update_revision.has_value() && n_.driver_pod.has_value() && !Current()) ||
         MovePending() || SafeLoadWaiting() || (Removing() && n_.driver_pod.has_value());
}

std::string DriverState::MoveTarget() const {
  if (n_.target_pool.empty()) return absl::StrCat("DaemonSet ", n_.target_daemon_set);
  return absl::StrCat("pool ", n_.target_pool, " (DaemonSet ", n_.target_daemon_set, ")");
}

std::string DriverState::RemovalReason() const {
  if (n_.removal == kRemovalDriverDisabled) return "spec.components.driver is off";
  if (n_.removal == kRemovalOperandsDisabled) return "gpuop.io/deploy.operands is false";
  if (n_.removal == kRemovalNodeDeselected) return "the policy no longer selects the node";
  return n_.removal;
}

std::string DriverState::OutdatedMessage() const {
  if (Removing()) return absl::StrCat("the driver leaves the node: ", RemovalReason());
  if (SafeLoadWaiting()) {
    return absl::StrCat("driver pod ", n_.driver_pod->name,
                        " waits to load until the node is drained (a driver is loaded there; ",
                        kDriverSafeLoadAnnotation, ")");
  }
  if (MovePending()) {
    return absl::StrCat("the node moves to ", MoveTarget());
  }
  if (n_.driver_pod->owner != n_.driver_daemon_set) {
    return absl::StrCat("driver pod ", n_.driver_pod->name, " belongs to DaemonSet ",
                        n_.driver_pod->owner, ", the node's pool uses ", n_.driver_daemon_set);
  }
  return absl::StrCat("driver pod ", n_.driver_pod->name, " is at revision ",
                      n_.driver_pod->revision, ", DaemonSet ", n_.driver_daemon_set, " at ",
                      *n_.update_revision);
}

}  // namespace gpuop::op::upgrade
