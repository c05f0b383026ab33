#ifndef GPUOP_TEST_FAKES_NVML_EMBEDDED_SCENARIO_H_
#define GPUOP_TEST_FAKES_NVML_EMBEDDED_SCENARIO_H_

// Builds the scenario the simulated driver container embeds in the libraries it installs
// (embedded.h), so that every process on the node plays the same machine.

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpuop::fakenvml {

// `yaml` (a scenario read from `origin`) with the node's identity fixed and device visibility
// set: `uuid_seed` becomes "<seed>/node/<node>" (seed: its uuid_seed, else its name, else
// `origin`), so its GPUs have the UUIDs and serials the file gives with
// GPUOP_FAKE_NVML_NODE=<node>; `device_nodes` is set to `device_nodes` (left out when empty), and
// `module_device_nodes` to `module_device_nodes` (left out when empty).
// Fails, naming `origin` and the field, when `yaml` is not a valid scenario; checks that the result
// derives the same GPUs.
absl::StatusOr<std::string> MakeEmbeddedScenario(absl::string_view yaml, absl::string_view origin,
                                                 absl::string_view node,
                                                 absl::string_view device_nodes,
                                                 absl::string_view module_device_nodes = "");

}  // namespace gpuop::fakenvml

#endif  // GPUOP_TEST_FAKES_NVML_EMBEDDED_SCENARIO_H_
