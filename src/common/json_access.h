#ifndef GPUOP_COMMON_JSON_ACCESS_H_
#define GPUOP_COMMON_JSON_ACCESS_H_

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpuop::common {

// Total reads of JSON whose shape nobody guarantees: annotations and labels that agents or
// people write, ConfigMaps, objects a person edits. nlohmann's value(), at() and get<>() throw
// on a wrong type; these never throw, whatever the value is.

// The value under `key` when `object` is an object that has it; a null value otherwise.
const nlohmann::json& JsonField(const nlohmann::json& object, absl::string_view key);
// The string under `key`; `fallback` when it is absent or not a string.
std::string JsonString(const nlohmann::json& object, absl::string_view key,
                       absl::string_view fallback = "");
// The integer under `key`; `fallback` when it is absent, not an integer, or beyond int64.
int64_t JsonInt(const nlohmann::json& object, absl::string_view key, int64_t fallback = 0);
// The boolean under `key`; `fallback` when it is absent or not a boolean.
bool JsonBool(const nlohmann::json& object, absl::string_view key, bool fallback = false);

// The deepest nesting ParseJson accepts by default: far beyond any document gpuop reads, and far
// below what would exhaust the stack of the recursive walks (dump, comparison) done on it.
inline constexpr int kMaxJsonDepth = 64;

// Parses `text` as one JSON document. InvalidArgument naming `what` ("annotation
// gpuop.io/gpu-inventory: ...") when it is not JSON or nests deeper than `max_depth`.
[[nodiscard]] absl::StatusOr<nlohmann::json> ParseJson(absl::string_view text,
                                                       absl::string_view what,
                                                       int max_depth = kMaxJsonDepth);

}  // namespace gpuop::common

#endif  // GPUOP_COMMON_JSON_ACCESS_H_
