#ifndef GPUOP_TEST_FAKES_NVML_NODE_CONTROL_H_
#define GPUOP_TEST_FAKES_NVML_NODE_CONTROL_H_

namespace gpuop::fakenvml {

// SIMULATED. The control file a library with an embedded scenario follows when
// GPUOP_FAKE_NVML_CONTROL is not set: this name in the library's own directory (README.md,
// "Control file"). The simulated driver empties it at every load.
inline constexpr const char* kNodeControlFile = "gpuop-fake-nvml-control";

}  // namespace gpuop::fakenvml

#endif  // GPUOP_TEST_FAKES_NVML_NODE_CONTROL_H_
