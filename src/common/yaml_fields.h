#ifndef GPUOP_COMMON_YAML_FIELDS_H_
#define GPUOP_COMMON_YAML_FIELDS_H_

#include <initializer_list>
#include <string>

#include <yaml-cpp/yaml.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpuop::common {

// Typed reads of the fields of a YAML document from an untrusted source (a ConfigMap, a file
// on the node). Every error is InvalidArgument "<prefix>: <field>: <problem>", so the message
// names the file and the field. None of the reads throw.
class YamlFields {
 public:
  // `prefix` names the document: "config cm/a100", "mig config /etc/mig/config.yaml".
  explicit YamlFields(std::string prefix) : prefix_(std::move(prefix)) {}

  absl::Status Error(absl::string_view field, absl::string_view problem) const;

  absl::StatusOr<std::string> String(const YAML::Node& node, absl::string_view field) const;
  absl::StatusOr<bool> Bool(const YAML::Node& node, absl::string_view field) const;
  absl::StatusOr<int> Int(const YAML::Node& node, absl::string_view field) const;
  // A non-negative integer (a GPU index or a count).
  absl::StatusOr<int> Count(const YAML::Node& node, absl::string_view field) const;

  // Rejects keys outside `known`: a typo must not silently change nothing. `field` is the
  // map's own name ("" for the document).
  absl::Status OnlyKeys(const YAML::Node& map, absl::string_view field,
                        std::initializer_list<const char*> known) const;

  // "<parent>.<key>", or `key` at the top.
  static std::string Join(absl::string_view parent, absl::string_view key);

 private:
  std::string prefix_;
};

}  // namespace gpuop::common

#endif  // GPUOP_COMMON_YAML_FIELDS_H_
