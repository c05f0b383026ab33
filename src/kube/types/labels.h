#ifndef GPUOP_KUBE_TYPES_LABELS_H_
#define GPUOP_KUBE_TYPES_LABELS_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/string_view.h"

namespace gpuop::kube {

// A string stored once per process and shared by every holder. Label and annotation keys (and
// many values: "true", product names, zones) repeat across thousands of objects; interning them
// makes a cached Node cost a few hundred bytes of labels instead of several kilobytes.
//
// The pool only grows, bounded by the number of distinct strings the process has seen. Only
// strings up to kMaxInternedSize are interned; longer ones are rare and unlikely to repeat.
class InternedString {
 public:
  static constexpr size_t kMaxInternedSize = 256;

  InternedString();
  explicit InternedString(absl::string_view value);

  const std::string& str() const { return *value_; }
  operator absl::string_view() const { return *value_; }  // NOLINT: a string by design.

  friend bool operator==(const InternedString& a, const InternedString& b) {
    return a.value_ == b.value_ || *a.value_ == *b.value_;
  }
  friend bool operator<(const InternedString& a, const InternedString& b) {
    return *a.value_ < *b.value_;
  }

 private:
  // Interned strings are referenced without a control block (the aliasing constructor with an
  // empty owner), so copies cost no reference counting; a string too long to intern is owned.
  std::shared_ptr<const std::string> value_;
};

// Number of distinct strings interned so far (for tests and benchmarks).
size_t InternedStringCount();

// Labels or annotations: an immutable, sorted key/value list with interned strings.
class Labels {
 public:
  Labels() = default;
  explicit Labels(const std::map<std::string, std::string>& values);

  // Reads a JSON object of strings; non-string values are skipped.
  static Labels FromJson(const nlohmann::json& object);

  std::optional<absl::string_view> Get(absl::string_view key) const;
  bool Has(absl::string_view key) const { return Get(key).has_value(); }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }

  std::map<std::string, std::string> ToMap() const;
  nlohmann::json ToJson() const;

  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

  friend bool operator==(const Labels& a, const Labels& b) { return a.items_ == b.items_; }

 private:
  std::vector<std::pair<InternedString, InternedString>> items_;
};

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_TYPES_LABELS_H_
