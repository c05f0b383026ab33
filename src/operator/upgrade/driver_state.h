#ifndef GPUOP_OPERATOR_UPGRADE_DRIVER_STATE_H_
#define GPUOP_OPERATOR_UPGRADE_DRIVER_STATE_H_

#include <string>

#include "operator/upgrade/snapshot.h"

namespace gpuop::op::upgrade {

// What is to change about a node's driver, from its snapshot: the facts the planner's states
// test (an outdated pod, a move to another driver DaemonSet, a removal, a pod waiting for a safe
// load) and the words its messages use for them.
class DriverState {
 public:
  explicit DriverState(const NodeSnapshot& node) : n_(node) {}

  // The node's driver pod belongs to its DaemonSet and is at its update revision.
  bool Current() const;
  // The node is to move to another driver DaemonSet (another pool's, OS's or kernel's) while its
  // driver runs.
  bool MovePending() const;
  // The driver is to leave the node (gpuop.io/driver-removal), until the node is back in service.
  bool Removing() const;
  // The driver leaves, and its DaemonSet still selects the node.
  bool RemovalPending() const;
  // The driver is off the node: switched off and its pod gone.
  bool Removed() const;
  // The node's driver pod waits for the node to be made safe before it loads (safe_load.h).
  bool SafeLoadWaiting() const;
  // Current, staying in its DaemonSet and loaded.
  bool UpToDate() const;
  // Something is to change: the upgrade has work on the node.
  bool Outdated() const;

  // "pool h100 (DaemonSet gpuop-driver-h100)", "DaemonSet gpuop-driver-rhel9.4".
  std::string MoveTarget() const;
  // Why the driver leaves, in words.
  std::string RemovalReason() const;
  // Why the node needs the upgrade, in words (Outdated()).
  std::string OutdatedMessage() const;

 private:
  const NodeSnapshot& n_;
};

}  // namespace gpuop::op::upgrade

#endif  // GPUOP_OPERATOR_UPGRADE_DRIVER_STATE_H_
