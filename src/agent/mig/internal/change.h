#ifndef GPUOP_AGENT_MIG_INTERNAL_CHANGE_H_
#define GPUOP_AGENT_MIG_INTERNAL_CHANGE_H_

#include <string>

#include "absl/time/time.h"
#include "agent/mig/mig_applier.h"
#include "agent/mig/mig_config.h"
#include "agent/mig/mig_manager.h"

namespace gpuop::agent::mig {

// One sync's attempt at a layout, shared by mig_manager.cc and mig_change.cc.
struct MigManager::Change {
  std::string layout;
  std::string initial_state;  // the state label when the sync began
  absl::Time deadline;
  std::string key;                // the layout and a digest of the configuration (retry state)
  std::string step = "starting";  // what is being done, for "timed out while <step>"
  DesiredLayout desired;
  bool in_place = false;  // nothing to change at all
  std::string summary;    // the layout per GPU, for the success reason
  // A refused reset with with_reboot: end in `rebooting` with the reboot requested.
  bool reboot = false;
};

// A run of ApplyLayoutPlan on a helper thread. Fields are guarded by the manager's mu_.
struct MigManager::HardwareRun {
  absl::Time started;
  std::string step = "starting";  // the latest operation begun
  bool done = false;
  ApplyResult result;
};

}  // namespace gpuop::agent::mig

#endif  // GPUOP_AGENT_MIG_INTERNAL_CHANGE_H_
