#include "operator/api/reader.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "operator/api/policy.h"

namespace gpuop::op {

namespace {
const nlohmann::json& Null() {
  static const nlohmann::json* const null = new nlohmann::json();
  return *null;
}
// `v` when it is an integer from `min` to `max`. An unsigned beyond int64 is out of range rather
// than wrapped to a negative number.
std::optional<int64_t> IntIn(const nlohmann::json& v, int64_t min, int64_t max) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (max < 0 || u > static_cast<uint64_t>(max)) return std::nullopt;
    const int64_t n = static_cast<int64_t>(u);
    return n < min ? std::nullopt : std::optional(n);
  }
  if (!v.is_number_integer()) return std::nullopt;
  const int64_t n = v.get<int64_t>();
  if (n < min || n > max) return std::nullopt;
  return n;
}

}  // namespace

namespace {
thread_local ScopedFieldLog* current_log = nullptr;
}  // namespace

ScopedFieldLog::ScopedFieldLog() : previous_(current_log) { current_log = this; }
ScopedFieldLog::~ScopedFieldLog() { current_log = previous_; }

void ScopedFieldLog::Record(const std::string& path) {
  if (current_log == nullptr) return;
  std::string plain;
  bool in_index = false;
  for (char c : path) {
    if (c == '[') in_index = true;
    if (!in_index) plain.push_back(c);
    if (c == ']') in_index = false;
  }
  current_log->paths_.insert(std::move(plain));
}

const nlohmann::json& Reader::Lookup(const char* key) const {
  if (!object_.is_object()) return Null();
  auto it = object_.find(key);
  return it == object_.end() ? Null() : *it;
}

const nlohmann::json& Reader::Get(const char* key) const {
  if (current_log != nullptr) ScopedFieldLog::Record(Path(key));
  return Lookup(key);
}

// Descending is not reading: only the fields read below count.
Reader Reader::Child(const char* key) const { return Reader(Lookup(key), Path(key)); }

std::string Reader::Path(absl::string_view key) const {
  return path_.empty() ? std::string(key) : absl::StrCat(path_, ".", key);
}

absl::Status Reader::Error(absl::string_view key, absl::string_view problem) const {
  return absl::InvalidArgumentError(absl::StrCat(Path(key), ": ", problem));
}

absl::Status Reader::String(const char* key, std::string& out) const {
  const nlohmann::json& v = Get(key);
  if (v.is_null()) return absl::OkStatus();
  if (!v.is_string()) return Error(key, "must be a string");
  out = v.get<std::string>();
  return absl::OkStatus();
}

absl::Status Reader::Bool(const char* key, bool& out) const {
  const nlohmann::json& v = Get(key);
  if (v.is_null()) return absl::OkStatus();
  if (!v.is_boolean()) return Error(key, "must be true or false");
  out = v.get<bool>();
  return absl::OkStatus();
}

absl::Status Reader::Int(const char* key, int64_t& out, int64_t min, int64_t max) const {
  const nlohmann::json& v = Get(key);
  if (v.is_null()) return absl::OkStatus();
  std::optional<int64_t> n = IntIn(v, min, max);
  if (!n.has_value()) return Error(key, absl::StrCat("must be an integer from ", min, " to ", max));
  out = *n;
  return absl::OkStatus();
}

absl::Status Reader::Duration(const char* key, absl::Duration& out) const {
  const nlohmann::json& v = Get(key);
  if (v.is_null()) return absl::OkStatus();
  absl::StatusOr<absl::Duration> d = ParseDurationField(v, Path(key));
  if (!d.ok()) return d.status();
  out = *d;
  return absl::OkStatus();
}

absl::Status Reader::StringList(const char* key, std::vector<std::string>& out) const {
  const nlohmann::json& v = Get(key);
  if (v.is_null()) return absl::OkStatus();
  if (!v.is_array()) return Error(key, "must be a list of strings");
  std::vector<std::string> items;
  for (const auto& item : v) {
    if (!item.is_string()) return Error(key, "must be a list of strings");
    items.push_back(item.get<std::string>());
  }
  out = std::move(items);
  return absl::OkStatus();
}

absl::Status Reader::IntList(const char* key, std::vector<int64_t>& out, int64_t min,
                             int64_t max) const {
  const nlohmann::json& v = Get(key);
  if (v.is_null()) return absl::OkStatus();
  const std::string problem = absl::StrCat("must be a list of integers from ", min, " to ", max);
  if (!v.is_array()) return Error(key, problem);
  std::vector<int64_t> items;
  for (const auto& item : v) {
    std::optional<int64_t> n = IntIn(item, min, max);
    if (!n.has_value()) return Error(key, problem);
    items.push_back(*n);
  }
  out = std::move(items);
  return absl::OkStatus();
}

absl::Status Reader::StringMap(const char* key, std::map<std::string, std::string>& out) const {
  const nlohmann::json& v = Get(key);
  if (v.is_null()) return absl::OkStatus();
  if (!v.is_object()) return Error(key, "must be an object of strings");
  std::map<std::string, std::string> items;
  for (const auto& [k, item] : v.items()) {
    if (!item.is_string()) return Error(absl::StrCat(key, ".", k), "must be a string");
    items[k] = item.get<std::string>();
  }
  out = std::move(items);
  return absl::OkStatus();
}

}  // namespace gpuop::op
