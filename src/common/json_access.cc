#include "common/json_access.h"

#include <limits>

#include "absl/strings/str_cat.h"

namespace gpuop::common {

const nlohmann::json& JsonField(const nlohmann::json& object, absl::string_view key) {
  static const nlohmann::json* const null = new nlohmann::json();
  if (!object.is_object()) return *null;
  auto it = object.find(key);
  return it == object.end() ? *null : *it;
}

std::string JsonString(const nlohmann::json& object, absl::string_view key,
                       absl::string_view fallback) {
  const nlohmann::json& v = JsonField(object, key);
  return v.is_string() ? v.get_ref<const std::string&>() : std::string(fallback);
}

int64_t JsonInt(const nlohmann::json& object, absl::string_view key, int64_t fallback) {
  const nlohmann::json& v = JsonField(object, key);
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    return u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? static_cast<int64_t>(u)
                                                                           : fallback;
  }
  return v.is_number_integer() ? v.get<int64_t>() : fallback;
}

bool JsonBool(const nlohmann::json& object, absl::string_view key, bool fallback) {
  const nlohmann::json& v = JsonField(object, key);
  return v.is_boolean() ? v.get<bool>() : fallback;
}

absl::StatusOr<nlohmann::json> ParseJson(absl::string_view text, absl::string_view what,
                                         int max_depth) {
  bool too_deep = false;
  // The callback sees each value's depth as it starts; refusing a too-deep one keeps the
  // parser's own stack and the result shallow, and the flag turns the result into an error.
  auto limit = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
    if ((event == nlohmann::json::parse_event_t::object_start ||
         event == nlohmann::json::parse_event_t::array_start) &&
        depth >= max_depth) {
      too_deep = true;
      return false;
    }
    return true;
  };
  nlohmann::json doc =
      nlohmann::json::parse(text.begin(), text.end(), limit, /*allow_exceptions=*/false);
  if (too_deep) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": nests deeper than ", max_depth, " levels"));
  }
  if (doc.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(what, ": not JSON"));
  return doc;
}

}  // namespace gpuop::common
