#ifndef GPUOP_TEST_NODE_NODE_E2E_DRIVER_STEPS_H_
#define GPUOP_TEST_NODE_NODE_E2E_DRIVER_STEPS_H_

// The node tier's driver steps, called in order by node_e2e_test.cc (which keeps every step in
// one file so they run in the order written). Each uses gtest assertions; a fatal one ends the
// step.

#include <string>

#include <nlohmann/json.hpp>

namespace gpuop::test {

// The simulated driver container on its own, as the operator's driver DaemonSet runs it
// (privileged, hostPID, /run/nvidia Bidirectional): it publishes the driver root and the device
// nodes on the node, and, like the real `rmmod`, refuses to unload while a process holds a device.
void SimulatedDriverAloneStep();

// A bare pod in the workloads namespace that takes two GPUs and runs gpu-probe --sleep.
nlohmann::json ProbePod(const std::string& name);

// A new driver pod template rolled out by the upgrade: clients paused and gone before the driver
// pod is deleted, the new one never restarted, the node back in service.
void DriverUpgradeStep();

// A driver pod deleted by hand while the driver is held: its replacement waits in its safe-load
// step until the operator made the node safe, then loads.
void SafeLoadStep();

}  // namespace gpuop::test

#endif  // GPUOP_TEST_NODE_NODE_E2E_DRIVER_STEPS_H_
