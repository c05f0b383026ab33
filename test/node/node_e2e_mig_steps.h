#ifndef GPUOP_TEST_NODE_NODE_E2E_MIG_STEPS_H_
#define GPUOP_TEST_NODE_NODE_E2E_MIG_STEPS_H_

// The node tier's MIG manager step, called by node_e2e_test.cc after the MIG layout step (the
// simulated driver plays eight A100s, four of them with MIG enabled, under the mixed strategy).

namespace gpuop::test {

// The MIG manager enabled and the node labelled nvidia.com/mig.config=all-1g.5gb, which turns MIG
// on for GPUs 4-7: a mode change that takes effect only with a GPU reset. While a user's pod
// holds one of those GPUs through NVML the reset is refused, and the change fails with the
// driver's reason and gives the GPU clients back; once the pod is gone, the retry stops every GPU
// client of gpuop's (each comes back as a new pod), resets the GPUs with nvidia-smi from the
// driver's root, applies the layout and serves 56 nvidia.com/mig-1g.5gb from the device plugin.
void MigManagerResetsTheGpusStep();

}  // namespace gpuop::test

#endif  // GPUOP_TEST_NODE_NODE_E2E_MIG_STEPS_H_
