#include "common/yaml_fields.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace gpuop::common {

absl::Status YamlFields::Error(absl::string_view field, absl::string_view problem) const {
  return absl::InvalidArgumentError(absl::StrCat(prefix_, ": ", field, ": ", problem));
}

std::string YamlFields::Join(absl::string_view parent, absl::string_view key) {
  return parent.empty() ? std::string(key) : absl::StrCat(parent, ".", key);
}

absl::StatusOr<std::string> YamlFields::String(const YAML::Node& node,
                                               absl::string_view field) const {
  if (!node.IsScalar()) return Error(field, "must be a string");
  return node.Scalar();
}

absl::StatusOr<bool> YamlFields::Bool(const YAML::Node& node, absl::string_view field) const {
  bool value = false;
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
    return Error(field, "must be true or false");
  }
  return value;
}

absl::StatusOr<int> YamlFields::Int(const YAML::Node& node, absl::string_view field) const {
  int value = 0;
  if (!node.IsScalar() || !YAML::convert<int>::decode(node, value)) {
    return Error(field, "must be an integer");
  }
  return value;
}

absl::StatusOr<int> YamlFields::Count(const YAML::Node& node, absl::string_view field) const {
  int value = 0;
  if (!node.IsScalar() || !YAML::convert<int>::decode(node, value) || value < 0) {
    return Error(field, absl::StrCat("must be a non-negative integer, got \"",
                                     node.IsScalar() ? node.Scalar() : "(not a scalar)", "\""));
  }
  return value;
}

absl::Status YamlFields::OnlyKeys(const YAML::Node& map, absl::string_view field,
                                  std::initializer_list<const char*> known) const {
  if (!map.IsMap()) return Error(field.empty() ? "(document)" : field, "must be a map");
  for (const auto& entry : map) {
    if (!entry.first.IsScalar()) return Error(field.empty() ? "(document)" : field, "bad key");
    const std::string& key = entry.first.Scalar();
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return key == k; })) {
      return Error(Join(field, key), "unknown field");
    }
  }
  return absl::OkStatus();
}

}  // namespace gpuop::common
