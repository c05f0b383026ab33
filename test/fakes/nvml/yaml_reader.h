#ifndef GPUOP_TEST_FAKES_NVML_YAML_READER_H_
#define GPUOP_TEST_FAKES_NVML_YAML_READER_H_

// Typed reads from yaml-cpp nodes that fail with the field's path instead of throwing:
// "gpus[1].power.min_w: expected a number between 0 and 100000, got \"x\"".

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpuop::fakenvml {

std::string ChildPath(absl::string_view path, absl::string_view key);  // "path.key"
std::string ItemPath(absl::string_view path, size_t index);            // "path[i]"

// InvalidArgument "path: what".
absl::Status FieldError(absl::string_view path, absl::string_view what);

absl::Status RequireMap(const YAML::Node& node, absl::string_view path);
absl::Status RequireSequence(const YAML::Node& node, absl::string_view path);
// Fails on a key of the map `node` that is not in `allowed` (a typo would otherwise be ignored).
absl::Status CheckKeys(const YAML::Node& node, absl::string_view path,
                       std::initializer_list<absl::string_view> allowed);

absl::StatusOr<std::string> ReadString(const YAML::Node& node, absl::string_view path);
// Decimal or 0x-prefixed hexadecimal.
absl::StatusOr<uint64_t> ReadUint(const YAML::Node& node, absl::string_view path,
                                  uint64_t max = 0xffffffffu);
absl::StatusOr<double> ReadNumber(const YAML::Node& node, absl::string_view path, double min,
                                  double max);
absl::StatusOr<bool> ReadBool(const YAML::Node& node, absl::string_view path);
absl::StatusOr<int64_t> ReadDurationMs(const YAML::Node& node, absl::string_view path);
absl::StatusOr<std::vector<unsigned int>> ReadUintList(const YAML::Node& node,
                                                       absl::string_view path, uint64_t max);

}  // namespace gpuop::fakenvml

#endif  // GPUOP_TEST_FAKES_NVML_YAML_READER_H_
