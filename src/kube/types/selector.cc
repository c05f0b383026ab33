#include "kube/types/selector.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gpuop::kube {

absl::StatusOr<LabelSelector> LabelSelector::FromJson(const nlohmann::json& object,
                                                      const std::string& path) {
  LabelSelector s;
  if (object.is_null()) return s;
  if (!object.is_object()) return absl::InvalidArgumentError(path + ": must be an object");
  if (auto labels = object.find("matchLabels"); labels != object.end() && !labels->is_null()) {
    if (!labels->is_object()) {
      return absl::InvalidArgumentError(path + ".matchLabels: must be an object of strings");
    }
    for (const auto& [k, v] : labels->items()) {
      if (!v.is_string()) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ".matchLabels[", k, "]: must be a string"));
      }
      s.match_labels_[k] = v.get<std::string>();
    }
  }
  auto exprs = object.find("matchExpressions");
  if (exprs == object.end() || exprs->is_null()) return s;
  if (!exprs->is_array()) {
    return absl::InvalidArgumentError(path + ".matchExpressions: must be a list");
  }
  for (size_t i = 0; i < exprs->size(); ++i) {
    const nlohmann::json& e = (*exprs)[i];
    const std::string where = absl::StrCat(path, ".matchExpressions[", i, "]");
    if (!e.is_object() || !e.contains("key") || !e["key"].is_string() || !e.contains("operator") ||
        !e["operator"].is_string()) {
      return absl::InvalidArgumentError(where + ": needs a key and an operator");
    }
    Requirement r{.key = e["key"].get<std::string>()};
    const std::string op = e["operator"].get<std::string>();
    if (op == "In") {
      r.op = Requirement::Operator::kIn;
    } else if (op == "NotIn") {
      r.op = Requirement::Operator::kNotIn;
    } else if (op == "Exists") {
      r.op = Requirement::Operator::kExists;
    } else if (op == "DoesNotExist") {
      r.op = Requirement::Operator::kDoesNotExist;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".operator: \"", op, "\" is not In, NotIn, Exists or DoesNotExist"));
    }
    if (auto values = e.find("values"); values != e.end() && values->is_array()) {
      for (const auto& v : *values) {
        if (v.is_string()) r.values.push_back(v.get<std::string>());
      }
    }
    const bool wants_values =
        r.op == Requirement::Operator::kIn || r.op == Requirement::Operator::kNotIn;
    if (wants_values == r.values.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, wants_values ? ": In and NotIn need values"
                                           : ": Exists and DoesNotExist take no values"));
    }
    s.expressions_.push_back(std::move(r));
  }
  return s;
}

bool LabelSelector::Matches(const Labels& labels) const {
  for (const auto& [k, v] : match_labels_) {
    auto got = labels.Get(k);
    if (!got.has_value() || *got != v) return false;
  }
  for (const auto& r : expressions_) {
    auto got = labels.Get(r.key);
    const bool listed =
        got.has_value() && std::find(r.values.begin(), r.values.end(), *got) != r.values.end();
    switch (r.op) {
      case Requirement::Operator::kIn:
        if (!listed) return false;
        break;
      case Requirement::Operator::kNotIn:
        if (listed) return false;
        break;
      case Requirement::Operator::kExists:
        if (!got.has_value()) return false;
        break;
      case Requirement::Operator::kDoesNotExist:
        if (got.has_value()) return false;
        break;
    }
  }
  return true;
}

std::string LabelSelector::ToString() const {
  std::vector<std::string> parts;
  for (const auto& [k, v] : match_labels_) parts.push_back(absl::StrCat(k, "=", v));
  for (const auto& r : expressions_) {
    switch (r.op) {
      case Requirement::Operator::kIn:
        parts.push_back(absl::StrCat(r.key, " in (", absl::StrJoin(r.values, ","), ")"));
        break;
      case Requirement::Operator::kNotIn:
        parts.push_back(absl::StrCat(r.key, " notin (", absl::StrJoin(r.values, ","), ")"));
        break;
      case Requirement::Operator::kExists:
        parts.push_back(r.key);
        break;
      case Requirement::Operator::kDoesNotExist:
        parts.push_back("!" + r.key);
        break;
    }
  }
  return absl::StrJoin(parts, ",");
}

}  // namespace gpuop::kube
