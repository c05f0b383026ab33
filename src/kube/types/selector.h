#ifndef GPUOP_KUBE_TYPES_SELECTOR_H_
#define GPUOP_KUBE_TYPES_SELECTOR_H_

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "kube/types/labels.h"

namespace gpuop::kube {

// A metav1.LabelSelector: matchLabels and matchExpressions, all of which must hold.
class LabelSelector {
 public:
  struct Requirement {
    enum class Operator { kIn, kNotIn, kExists, kDoesNotExist };
    std::string key;
    Operator op = Operator::kExists;
    std::vector<std::string> values;
    friend bool operator==(const Requirement&, const Requirement&) = default;
  };

  LabelSelector() = default;  // matches everything

  // Reads {matchLabels, matchExpressions}; InvalidArgument naming the field (under `path`) when
  // malformed (an unknown operator, In without values).
  [[nodiscard]] static absl::StatusOr<LabelSelector> FromJson(const nlohmann::json& object,
                                                              const std::string& path);

  bool Matches(const Labels& labels) const;
  bool Empty() const { return match_labels_.empty() && expressions_.empty(); }
  // The kubectl form ("a=b,c in (d,e),!f") for a list's labelSelector parameter.
  std::string ToString() const;

  friend bool operator==(const LabelSelector&, const LabelSelector&) = default;

 private:
  std::map<std::string, std::string> match_labels_;
  std::vector<Requirement> expressions_;
};

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_TYPES_SELECTOR_H_
