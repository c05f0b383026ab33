#include "agent/runtime/toml_util.h"

#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gpuop::agent::runtime {
namespace {

std::string TypeName(toml::node_type type) {
  switch (type) {
    case toml::node_type::none:
      return "nothing";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
  }
  return "an unknown type";
}

bool IsBareKey(std::string_view key) {
  if (key.empty()) return false;
  for (const char c : key) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

void AppendKey(std::string& out, std::string_view key) {
  if (!out.empty()) out += '.';
  if (IsBareKey(key)) {
    out += key;
    return;
  }
  out += '"';
  for (const char c : key) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppend(&out, absl::StrFormat("\\u%04X", static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  out += '"';
}

}  // namespace

absl::StatusOr<toml::table> ParseToml(absl::string_view content,
                                      const std::filesystem::path& file) {
  try {
    return toml::parse(std::string_view(content.data(), content.size()),
                       std::string_view(file.native()));
  } catch (const toml::parse_error& e) {
    return absl::FailedPreconditionError(
        absl::StrCat(file.string(), ":", e.source().begin.line, ":", e.source().begin.column,
                     ": invalid TOML: ", AbslView(e.description())));
  }
}

std::string FormatToml(const toml::table& table) {
  std::ostringstream out;
  out << toml::toml_formatter{table, toml::format_flags::indent_sub_tables};
  std::string text = out.str();
  if (text.empty() || text.back() != '\n') text += '\n';
  return text;
}

std::string KeyPath(std::initializer_list<std::string_view> keys) {
  std::string out;
  for (const std::string_view key : keys) AppendKey(out, key);
  return out;
}

std::string Where(const std::filesystem::path& file, const toml::node& node) {
  // Nodes copied from another file (merged drop-ins) carry that file's name.
  const std::string name = node.source().path != nullptr ? *node.source().path : file.string();
  const toml::source_position begin = node.source().begin;
  if (!begin) return name;
  return absl::StrCat(name, ":", begin.line, ":", begin.column);
}

absl::Status ExpectType(const toml::node* node, toml::node_type type,
                        const std::filesystem::path& file, std::string_view key_path) {
  if (node == nullptr || node->type() == type) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(Where(file, *node), ": ", AbslView(key_path),
                                                    " is ", TypeName(node->type()), ", expected ",
                                                    TypeName(type)));
}

absl::Status ExpectStringArray(const toml::node* node, const std::filesystem::path& file,
                               std::string_view key_path) {
  if (absl::Status status = ExpectType(node, toml::node_type::array, file, key_path);
      !status.ok() || node == nullptr) {
    return status;
  }
  const toml::array& array = *node->as_array();
  for (size_t i = 0; i < array.size(); ++i) {
    if (!array[i].is_string()) {
      return absl::FailedPreconditionError(
          absl::StrCat(Where(file, array[i]), ": ", AbslView(key_path), "[", i, "] is ",
                       TypeName(array[i].type()), ", expected a string"));
    }
  }
  return absl::OkStatus();
}

void DeepMerge(toml::table& into, const toml::table& from) {
  for (const auto& [key, value] : from) {
    toml::node* existing = into.get(key.str());
    if (existing != nullptr && existing->is_table() && value.is_table()) {
      DeepMerge(*existing->as_table(), *value.as_table());
    } else {
      into.insert_or_assign(key, value);
    }
  }
}

namespace {

// toml::node has no equality of its own; a table's compares its values.
bool SameValue(const toml::node& a, const toml::node& b) {
  toml::table left;
  left.insert("v", a);
  toml::table right;
  right.insert("v", b);
  return left == right;
}

}  // namespace

toml::table DeepDiff(const toml::table& after, const toml::table& before) {
  toml::table diff;
  for (const auto& [key, value] : after) {
    const toml::node* old = before.get(key.str());
    if (old != nullptr && old->is_table() && value.is_table()) {
      toml::table sub = DeepDiff(*value.as_table(), *old->as_table());
      if (!sub.empty()) diff.insert(key, std::move(sub));
    } else if (old == nullptr || !SameValue(*old, value)) {
      diff.insert(key, value);
    }
  }
  return diff;
}

toml::array StringArray(const std::vector<std::string>& values) {
  toml::array array;
  for (const std::string& value : values) array.push_back(value);
  return array;
}

}  // namespace gpuop::agent::runtime
