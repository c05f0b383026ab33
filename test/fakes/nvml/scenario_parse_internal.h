#ifndef GPUOP_TEST_FAKES_NVML_SCENARIO_PARSE_INTERNAL_H_
#define GPUOP_TEST_FAKES_NVML_SCENARIO_PARSE_INTERNAL_H_

// Pieces of the scenario parser shared between its files.

#include <vector>

#include <yaml-cpp/yaml.h>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "test/fakes/nvml/scenario.h"

namespace gpuop::fakenvml {

// {pid, used_mib, gpu_instance, compute_instance}
absl::StatusOr<ProcessSpec> ReadProcess(const YAML::Node& node, absl::string_view path);
absl::StatusOr<MigSpec> ReadMigSpec(const YAML::Node& node, absl::string_view path);
// Needs gpu.mig and gpu.mig_enabled already read.
absl::StatusOr<std::vector<MigInstanceSpec>> ReadMigInstances(const YAML::Node& node,
                                                              absl::string_view path,
                                                              const GpuSpec& gpu);
absl::StatusOr<std::vector<TopologyOverride>> ReadTopology(const YAML::Node& node);
// Sorted by time; series expanded into one set per step.
absl::StatusOr<std::vector<TimedAction>> ReadTimeline(const YAML::Node& node);

}  // namespace gpuop::fakenvml

#endif  // GPUOP_TEST_FAKES_NVML_SCENARIO_PARSE_INTERNAL_H_
