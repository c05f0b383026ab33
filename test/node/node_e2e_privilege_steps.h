#ifndef GPUOP_TEST_NODE_NODE_E2E_PRIVILEGE_STEPS_H_
#define GPUOP_TEST_NODE_NODE_E2E_PRIVILEGE_STEPS_H_

// The node tier's least-privilege steps, called in order by node_e2e_test.cc: gpuop's GPU
// managers run without privilege under the RuntimeClass gpuop, and the runtime behind it gives
// the MIG monitor capability only to a container with CAP_SYS_ADMIN.

namespace gpuop::test {

// The labels, device plugin, health and exporter pods run under the RuntimeClass gpuop, not
// privileged, with CAP_SYS_ADMIN as their only capability; the management spec they get their
// devices from lists every GPU's node and the MIG monitor capability.
void GpuManagersRunUnprivilegedStep();

// Pods under the RuntimeClass gpuop, through the real containerd and gpuop-container-runtime:
// the management devices reach a container with no capability at all, the MIG monitor
// capability is refused to it, naming CAP_SYS_ADMIN, and given to one that holds it.
void MigMonitorNeedsSysAdminStep();

// The simulated driver replaced by one playing eight A100s with a mixed MIG layout (scenario
// a100-8x-mig) and the device plugin's MIG strategy set to mixed: from inside the unprivileged
// pods, the device plugin serves nvidia.com/mig-<profile> resources, the labels component
// publishes the profiles, and the exporter one series per GPU instance with its memory. Every one
// of these needs the MIG monitor capability (NVML answers instance queries only to a holder).
void MigLayoutFromInsideThePodsStep();

}  // namespace gpuop::test

#endif  // GPUOP_TEST_NODE_NODE_E2E_PRIVILEGE_STEPS_H_
