#include "operator/api/reader.h"

#include "absl/strings/str_cat.h"
#include "operator/api/policy.h"

namespace gpuop::op {

namespace {
const nlohmann::json& Null() {
  static const nlohmann::json* const null = new nlohmann::json();
  return *null;
}
}  // namespace

const nlohmann::json& Reader::Get(const char* key) const {
  if (!object_.is_object()) return Null();
  auto it = object_.find(key);
  return it == object_.end() ? Null() : *it;
}

Reader Reader::Child(const char* key) const { return Reader(Get(key), Path(key)); }

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
  if (!v.is_number_integer() || v.get<int64_t>() < min || v.get<int64_t>() > max) {
    return Error(key, absl::StrCat("must be an integer from ", min, " to ", max));
  }
  out = v.get<int64_t>();
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

absl::Status Reader::IntList(const char* key, std::vector<int64_t>& out) const {
  const nlohmann::json& v = Get(key);
  if (v.is_null()) return absl::OkStatus();
  if (!v.is_array()) return Error(key, "must be a list of integers");
  std::vector<int64_t> items;
  for (const auto& item : v) {
    if (!item.is_number_integer()) return Error(key, "must be a list of integers");
    items.push_back(item.get<int64_t>());
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
