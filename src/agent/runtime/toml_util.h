#ifndef GPUOP_AGENT_RUNTIME_TOML_UTIL_H_
#define GPUOP_AGENT_RUNTIME_TOML_UTIL_H_

// toml++ at the edge: parsing without exceptions escaping, type checks that name the file, line
// and key, and deterministic output. Internal to agent/runtime.

#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpuop::agent::runtime {

inline absl::string_view AbslView(std::string_view s) { return {s.data(), s.size()}; }

// Parses `content`; a syntax error is FailedPrecondition "<file>:<line>:<column>: <problem>".
[[nodiscard]] absl::StatusOr<toml::table> ParseToml(absl::string_view content,
                                                    const std::filesystem::path& file);

// The table as TOML: keys sorted, sub-tables indented, basic (double-quoted) strings, ending in a
// newline. The same table always gives the same bytes.
std::string FormatToml(const toml::table& table);

// "plugins.\"io.containerd.grpc.v1.cri\".enable_cdi": the TOML spelling of a key path.
std::string KeyPath(std::initializer_list<std::string_view> keys);

// "<file>:<line>:<column>" for a parsed node, or "<file>" when the node has no position. The file
// is the one the node was parsed from when known (a node merged in from a drop-in), else `file`.
std::string Where(const std::filesystem::path& file, const toml::node& node);

// OK when `node` is null (key absent) or has type `type`; otherwise FailedPrecondition
// "<file>:<line>:<col>: <key_path> is a string, expected a table".
[[nodiscard]] absl::Status ExpectType(const toml::node* node, toml::node_type type,
                                      const std::filesystem::path& file, std::string_view key_path);

// ExpectType(array) plus every element a string.
[[nodiscard]] absl::Status ExpectStringArray(const toml::node* node,
                                             const std::filesystem::path& file,
                                             std::string_view key_path);

// Merges `from` into `into`: tables merge key by key, recursively; any other value replaces.
void DeepMerge(toml::table& into, const toml::table& from);

// What DeepMerge(before, result) needs to turn `before` into `after`, where `after` only adds
// keys or changes values of `before`: the keys of `after` that are new or whose values differ,
// tables compared key by key (a table left empty is dropped).
toml::table DeepDiff(const toml::table& after, const toml::table& before);

// A TOML array of strings.
toml::array StringArray(const std::vector<std::string>& values);

}  // namespace gpuop::agent::runtime

#endif  // GPUOP_AGENT_RUNTIME_TOML_UTIL_H_
