#ifndef GPUOP_OPERATOR_UNINSTALL_UNINSTALLER_H_
#define GPUOP_OPERATOR_UNINSTALL_UNINSTALLER_H_

// `gpuop-operator uninstall`: what Helm's pre-delete hook runs, so that `helm uninstall` leaves
// the cluster and its nodes as they were before gpuop.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "kube/client/client.h"

namespace gpuop::op::uninstall {

struct UninstallOptions {
  std::string ns;  // where the operator and its operands run
  std::string operator_deployment = "gpuop-operator";
  absl::Duration step_timeout = absl::Minutes(5);  // each wait below
  absl::Duration poll = absl::Seconds(1);
};

// What was done and what could not be, for the hook's log.
struct UninstallReport {
  std::vector<std::string> done;
  std::vector<std::string> problems;  // each names the object and why
};

// In order:
//   1. scales the operator's Deployment to 0 and waits for its pods to go, so nothing renders
//      the operands again;
//   2. deletes the GPU clients' DaemonSets (every gpuop DaemonSet but the driver's, the runtime
//      component's, CDI's and the power manager's) and waits for their pods to go;
//   3. turns the runtime, CDI and power DaemonSets into their undo (`gpuop-agent runtime
//      unconfigure`, which restores the runtime's configuration byte for byte and restarts it;
//      `gpuop-agent cdi remove`, which deletes gpuop's CDI specs and its hook; `gpuop-agent power
//      --restore`, which gives back the power limits it lowered), all nodes at once, and waits
//      until each of their pods ran it to exit 0;
//   4. deletes the remaining gpuop DaemonSets (runtime, CDI, power, the drivers) and waits for
//      their pods to go;
//   5. takes gpuop's labels, annotations, taints and cordons off every Node (NodeCleanupPatch);
//   6. deletes every GPUNode and the objects the operator rendered
//      (app.kubernetes.io/managed-by=gpuop-operator): ServiceAccounts, ConfigMaps, the
//      exporter's Service and ServiceMonitor in `ns`, ClusterRoles, ClusterRoleBindings and the
//      RuntimeClass.
// A step that times out (a node that is down) is reported and the next step runs: an uninstall
// never hangs on one node. The result is OK when nothing was reported as a problem.
class Uninstaller {
 public:
  Uninstaller(kube::Client& client, UninstallOptions options)
      : client_(client), options_(std::move(options)) {}

  absl::Status Run(UninstallReport& report);

 private:
  absl::Status StopOperator(UninstallReport& report);
  absl::Status DeleteDaemonSets(bool clients, UninstallReport& report);
  absl::Status UndoNodeFiles(UninstallReport& report);
  absl::Status CleanNodes(UninstallReport& report);
  absl::Status DeleteRendered(UninstallReport& report);
  // Waits until no pod of the DaemonSet (or Deployment) `name` is left.
  absl::Status AwaitPodsGone(const std::vector<std::string>& names);

  kube::Client& client_;
  UninstallOptions options_;
};

// The undo of a runtime, CDI or power component's command, or empty for any other command:
// `runtime configure ... --keep-running` becomes `runtime unconfigure ...`;
// `cdi generate ...` becomes `cdi remove` with the output, host-root and hook flags kept;
// `power ...` becomes `power ... --restore` (the limits it lowered go back to the defaults).
std::vector<std::string> UndoCommand(const std::vector<std::string>& command);

}  // namespace gpuop::op::uninstall

#endif  // GPUOP_OPERATOR_UNINSTALL_UNINSTALLER_H_
