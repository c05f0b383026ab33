#include "operator/upgrade/pod_selector.h"

#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gpuop::op::upgrade {
namespace {

// Label keys ("example.com/name") and values: letters, digits, '-', '_', '.', '/'.
bool ValidToken(absl::string_view token, bool allow_empty) {
  if (token.empty()) return allow_empty;
  for (char c : token) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '_' && c != '.' && c != '/') return false;
  }
  return true;
}

// Splits at commas outside parentheses.
absl::StatusOr<std::vector<absl::string_view>> Terms(absl::string_view text) {
  std::vector<absl::string_view> terms;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '(') ++depth;
    if (text[i] == ')' && --depth < 0) return absl::InvalidArgumentError("unbalanced ')'");
    if (text[i] == ',' && depth == 0) {
      terms.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  if (depth != 0) return absl::InvalidArgumentError("unbalanced '('");
  terms.push_back(text.substr(start));
  return terms;
}

// One term as a matchExpressions entry.
absl::StatusOr<nlohmann::json> Requirement(absl::string_view term) {
  term = absl::StripAsciiWhitespace(term);
  auto requirement = [](absl::string_view key, const char* op,
                        std::vector<std::string> values) -> absl::StatusOr<nlohmann::json> {
    key = absl::StripAsciiWhitespace(key);
    if (!ValidToken(key, false)) return absl::InvalidArgumentError("a label key is malformed");
    for (std::string& v : values) {
      v = std::string(absl::StripAsciiWhitespace(v));
      if (!ValidToken(v, true)) return absl::InvalidArgumentError("a label value is malformed");
    }
    nlohmann::json r = {{"key", std::string(key)}, {"operator", op}};
    if (!values.empty()) r["values"] = values;
    return r;
  };
  if (term.empty()) return absl::InvalidArgumentError("an empty term");
  if (absl::ConsumePrefix(&term, "!")) return requirement(term, "DoesNotExist", {});
  if (size_t open = term.find('('); open != absl::string_view::npos) {
    if (!absl::EndsWith(term, ")")) return absl::InvalidArgumentError("a set must end with ')'");
    absl::string_view head = absl::StripTrailingAsciiWhitespace(term.substr(0, open));
    const std::vector<std::string> values =
        absl::StrSplit(term.substr(open + 1, term.size() - open - 2), ',');
    const char* op = nullptr;
    if (absl::ConsumeSuffix(&head, " notin")) {
      op = "NotIn";
    } else if (absl::ConsumeSuffix(&head, " in")) {
      op = "In";
    } else {
      return absl::InvalidArgumentError("a set needs 'in' or 'notin'");
    }
    return requirement(head, op, values);
  }
  if (size_t ne = term.find("!="); ne != absl::string_view::npos) {
    return requirement(term.substr(0, ne), "NotIn", {std::string(term.substr(ne + 2))});
  }
  if (size_t eq = term.find("=="); eq != absl::string_view::npos) {
    return requirement(term.substr(0, eq), "In", {std::string(term.substr(eq + 2))});
  }
  if (size_t eq = term.find('='); eq != absl::string_view::npos) {
    return requirement(term.substr(0, eq), "In", {std::string(term.substr(eq + 1))});
  }
  return requirement(term, "Exists", {});
}

}  // namespace

absl::StatusOr<kube::LabelSelector> ParsePodSelector(absl::string_view text,
                                                     absl::string_view field) {
  auto invalid = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": \"", text, "\" is not a label selector: ", why));
  };
  if (absl::StripAsciiWhitespace(text).empty()) return kube::LabelSelector();
  absl::StatusOr<std::vector<absl::string_view>> terms = Terms(text);
  if (!terms.ok()) return invalid(terms.status().message());
  nlohmann::json expressions = nlohmann::json::array();
  for (absl::string_view term : *terms) {
    absl::StatusOr<nlohmann::json> r = Requirement(term);
    if (!r.ok()) return invalid(absl::StrCat(r.status().message(), " in \"", term, "\""));
    expressions.push_back(*std::move(r));
  }
  absl::StatusOr<kube::LabelSelector> selector =
      kube::LabelSelector::FromJson({{"matchExpressions", expressions}}, std::string(field));
  if (!selector.ok()) return invalid(selector.status().message());
  return selector;
}

}  // namespace gpuop::op::upgrade
