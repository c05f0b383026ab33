#ifndef GPUOP_TEST_FAKES_NVML_NODE_CONTROL_H_
#define GPUOP_TEST_FAKES_NVML_NODE_CONTROL_H_

namespace gpuop::fakenvml {

// SIMULATED. The control file a library with an embedded scenario follows when
// GPUOP_FAKE_NVML_CONTROL is not set: this name in the library's own directory (README.md,
// "Control file"). The simulated driver empties it at every load.
inline constexpr const char* kNodeControlFile = "gpuop-fake-nvml-control";

// SIMULATED. The node's MIG state (node_state.h) a library with an embedded scenario keeps when
// GPUOP_FAKE_NVML_STATE is not set: this name in the library's own directory (README.md, "Node
// MIG state"), with "<name>.lock" beside it. The simulated driver removes it at every load: a
// driver reload resets every GPU.
inline constexpr const char* kNodeStateFile = "gpuop-fake-nvml-state";

}  // namespace gpuop::fakenvml

#endif  // GPUOP_TEST_FAKES_NVML_NODE_CONTROL_H_
