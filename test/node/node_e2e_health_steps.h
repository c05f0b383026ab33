#ifndef GPUOP_TEST_NODE_NODE_E2E_HEALTH_STEPS_H_
#define GPUOP_TEST_NODE_NODE_E2E_HEALTH_STEPS_H_

// The node tier's health step, called by node_e2e_test.cc. Uses gtest assertions; a fatal one
// ends the step.

namespace gpuop::test {

// XIDs acting by class on the real kubelet: an application XID leaves its GPU allocatable; an XID
// that needs a GPU reset withdraws the GPU, the node reports GPURecoveryAction=ResetGpu,
// remediation restarts the driver (which resets the GPUs), and the GPU returns once the new
// driver has loaded, not before.
void XidRemediationStep();

}  // namespace gpuop::test

#endif  // GPUOP_TEST_NODE_NODE_E2E_HEALTH_STEPS_H_
