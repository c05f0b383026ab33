#include "common/yaml_json.h"

#include <yaml-cpp/yaml.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gpuop::common {

namespace {

nlohmann::json Scalar(const YAML::Node& node) {
  const std::string& text = node.Scalar();
  if (node.Tag() == "!") return text;  // quoted
  if (text.empty() || text == "null" || text == "~" || text == "Null" || text == "NULL") {
    return nullptr;
  }
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  int64_t i = 0;
  if (absl::SimpleAtoi(text, &i)) return i;
  double d = 0;
  const bool numeric = text.find_first_not_of("0123456789.eE+-") == std::string::npos;
  if (numeric && absl::SimpleAtod(text, &d)) return d;
  return text;
}

nlohmann::json Convert(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      return Scalar(node);
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : node) out.push_back(Convert(item));
      return out;
    }
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& kv : node) out[kv.first.as<std::string>()] = Convert(kv.second);
      return out;
    }
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<std::vector<nlohmann::json>> YamlDocumentsToJson(absl::string_view yaml) {
  std::vector<nlohmann::json> out;
  try {
    for (const YAML::Node& doc : YAML::LoadAll(std::string(yaml))) {
      nlohmann::json j = Convert(doc);
      if (!j.is_null()) out.push_back(std::move(j));
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("YAML at line ", e.mark.line + 1, ", column ",
                                                   e.mark.column + 1, ": ", e.msg));
  }
  return out;
}

}  // namespace gpuop::common
