#ifndef GPUOP_OPERATOR_NODES_DRIVER_CLIENTS_H_
#define GPUOP_OPERATOR_NODES_DRIVER_CLIENTS_H_

#include <map>
#include <string>
#include <vector>

#include "kube/types/labels.h"
#include "operator/api/policy.h"

namespace gpuop::op {

// gpuop's own GPU clients on a node, paused while the node's driver pod is replaced (a driver
// upgrade's pod-restart-required step, remediation's RestartDriver step).
//
// A driver cannot unload while a process holds its device nodes or has its libraries loaded
// (NVIDIA's driver container exits with "Could not unload NVIDIA driver kernel modules, driver is
// in use", and the DaemonSet's next pod crash-loops on the same refusal). Every component that
// opens the driver is therefore taken off the node first, the way NVIDIA's driver manager does
// it: its deploy label gpuop.io/deploy.<component> goes from "true" to kPausedForDriverValue,
// which takes the node out of the component's DaemonSet; the old driver pod is deleted only once
// none of their pods is left on the node; when the new driver pod is Ready the labels go back to
// "true" and the DaemonSets bring the clients back (their wait-for-driver init containers hold
// them until the new driver validated).
//
// The labels are written by the operator (field manager gpuop-operator) in the same patch as the
// state that needs them; node labelling keeps a deploy label it finds at kPausedForDriverValue.
// A label at any other value than "true" (false, paused-for-mig-change, not-applicable) is left
// alone: its component has no pod on the node anyway.
inline constexpr char kPausedForDriverValue[] = "paused-for-driver-upgrade";

// The components that open the driver: CDI, labels, device plugin, health, exporter, validator,
// MIG manager, power manager and the MPS daemons. Not the driver itself, the runtime component (it
// edits the container runtime's configuration and never loads the driver) or discovery (PCI sysfs
// only).
inline constexpr Component kDriverClients[] = {
    Component::kCdi,        Component::kLabels,       Component::kDevicePlugin,
    Component::kHealth,     Component::kExporter,     Component::kValidator,
    Component::kMigManager, Component::kPowerManager, Component::kMpsDaemon,
};

// Whether the component named `name` (app.kubernetes.io/component) is a driver client.
bool IsDriverClient(const std::string& name);

// The node's driver clients as its labels and pods show them.
struct DriverClients {
  std::vector<std::string> to_pause;  // deploy labels at "true", of components the policy enables
  std::vector<std::string> paused;    // deploy labels at kPausedForDriverValue
  std::vector<std::string> running;   // client pods still on the node (not yet deleted)

  // Nothing holds the driver on gpuop's side: no label to pause, no client pod left.
  bool Stopped() const { return to_pause.empty() && running.empty(); }
  // The label writes that pause the clients (to_pause -> kPausedForDriverValue).
  std::map<std::string, std::string> PauseLabels() const;
  // The label writes that bring them back (paused -> "true").
  std::map<std::string, std::string> ResumeLabels() const;
  // "device-plugin, exporter" from labels; for messages.
  static std::string ComponentsOf(const std::vector<std::string>& labels);
};

// A client pod on the node, as the caller's cache has it.
struct ClientPod {
  std::string name;
  std::string component;
  std::string phase;
};

// The driver clients of a node with `labels` under `policy`, and which of `pods` (the operand
// pods on the node) are clients that have not finished.
DriverClients DescribeDriverClients(const kube::Labels& labels, const PolicySpec& policy,
                                    const std::vector<ClientPod>& pods);

}  // namespace gpuop::op

#endif  // GPUOP_OPERATOR_NODES_DRIVER_CLIENTS_H_
