#include "test/fakes/nvml/yaml_reader.h"

#include <cmath>
#include <cstdio>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "test/fakes/nvml/scenario.h"

namespace gpuop::fakenvml {
namespace {

std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return absl::StrCat("\"", node.Scalar(), "\"");
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a map";
    default:
      return "nothing";
  }
}

absl::StatusOr<std::string> Scalar(const YAML::Node& node, absl::string_view path,
                                   absl::string_view expected) {
  if (!node.IsScalar()) {
    return FieldError(path, absl::StrCat("expected ", expected, ", got ", Describe(node)));
  }
  return node.Scalar();
}

}  // namespace

std::string ChildPath(absl::string_view path, absl::string_view key) {
  return path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
}

std::string ItemPath(absl::string_view path, size_t index) {
  return absl::StrCat(path, "[", index, "]");
}

absl::Status FieldError(absl::string_view path, absl::string_view what) {
  return absl::InvalidArgumentError(path.empty() ? std::string(what)
                                                 : absl::StrCat(path, ": ", what));
}

absl::Status RequireMap(const YAML::Node& node, absl::string_view path) {
  if (node.IsMap()) return absl::OkStatus();
  return FieldError(path, absl::StrCat("expected a map, got ", Describe(node)));
}

absl::Status RequireSequence(const YAML::Node& node, absl::string_view path) {
  if (node.IsSequence()) return absl::OkStatus();
  return FieldError(path, absl::StrCat("expected a list, got ", Describe(node)));
}

absl::Status CheckKeys(const YAML::Node& node, absl::string_view path,
                       std::initializer_list<absl::string_view> allowed) {
  GPUOP_RETURN_IF_ERROR(RequireMap(node, path));
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) return FieldError(path, "keys must be plain names");
    const std::string& key = entry.first.Scalar();
    bool known = false;
    for (const absl::string_view name : allowed) known = known || key == name;
    if (!known) return FieldError(ChildPath(path, key), "unknown field");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadString(const YAML::Node& node, absl::string_view path) {
  return Scalar(node, path, "a string");
}

absl::StatusOr<uint64_t> ReadUint(const YAML::Node& node, absl::string_view path, uint64_t max) {
  const std::string expected = absl::StrCat("an integer between 0 and ", max);
  GPUOP_ASSIGN_OR_RETURN(const std::string text, Scalar(node, path, expected));
  uint64_t value = 0;
  absl::string_view body = text;
  const bool ok = absl::ConsumePrefix(&body, "0x") || absl::ConsumePrefix(&body, "0X")
                      ? absl::SimpleHexAtoi(body, &value)
                      : absl::SimpleAtoi(body, &value);
  if (!ok || body.empty() || body[0] == '-' || body[0] == '+' || value > max) {
    return FieldError(path, absl::StrCat("expected ", expected, ", got \"", text, "\""));
  }
  return value;
}

absl::StatusOr<double> ReadNumber(const YAML::Node& node, absl::string_view path, double min,
                                  double max) {
  char expected[96];
  std::snprintf(expected, sizeof(expected), "a number between %g and %g", min, max);
  GPUOP_ASSIGN_OR_RETURN(const std::string text, Scalar(node, path, expected));
  double value = 0;
  if (!absl::SimpleAtod(text, &value) || !std::isfinite(value) || value < min || value > max) {
    return FieldError(path, absl::StrCat("expected ", expected, ", got \"", text, "\""));
  }
  return value;
}

absl::StatusOr<bool> ReadBool(const YAML::Node& node, absl::string_view path) {
  GPUOP_ASSIGN_OR_RETURN(const std::string text, Scalar(node, path, "true or false"));
  bool value = false;
  if (!absl::SimpleAtob(text, &value)) {
    return FieldError(path, absl::StrCat("expected true or false, got \"", text, "\""));
  }
  return value;
}

absl::StatusOr<int64_t> ReadDurationMs(const YAML::Node& node, absl::string_view path) {
  GPUOP_ASSIGN_OR_RETURN(const std::string text, Scalar(node, path, "a duration"));
  absl::StatusOr<int64_t> ms = ParseDurationMs(text);
  if (!ms.ok()) return FieldError(path, ms.status().message());
  return ms;
}

absl::StatusOr<std::vector<unsigned int>> ReadUintList(const YAML::Node& node,
                                                       absl::string_view path, uint64_t max) {
  GPUOP_RETURN_IF_ERROR(RequireSequence(node, path));
  std::vector<unsigned int> values;
  for (size_t i = 0; i < node.size(); ++i) {
    GPUOP_ASSIGN_OR_RETURN(const uint64_t value, ReadUint(node[i], ItemPath(path, i), max));
    values.push_back(static_cast<unsigned int>(value));
  }
  return values;
}

}  // namespace gpuop::fakenvml
