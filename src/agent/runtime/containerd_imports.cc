// The one edit gpuop makes to containerd's main file: an imports entry for its drop-in.

#include <optional>

#include <fnmatch.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/runtime/containerd.h"
#include "agent/runtime/toml_util.h"
#include "common/status_macros.h"

namespace gpuop::agent::runtime {
namespace {

namespace fs = std::filesystem;

constexpr size_t kNpos = std::string::npos;

// Byte offset of a 1-based (line, column) position, columns counted in code points as toml++
// counts them; nullopt when the position is outside `text`.
std::optional<size_t> OffsetOf(absl::string_view text, uint32_t line, uint32_t column) {
  size_t pos = 0;
  for (uint32_t l = 1; l < line; ++l) {
    pos = text.find('\n', pos);
    if (pos == kNpos) return std::nullopt;
    ++pos;
  }
  for (uint32_t c = 1; c < column; ++c) {
    if (pos >= text.size() || text[pos] == '\n') return std::nullopt;
    ++pos;
    while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) ++pos;
  }
  return pos;
}

// Offset just past the TOML string that starts at `i` (a quote), or kNpos when unterminated.
size_t SkipString(absl::string_view s, size_t i) {
  const char quote = s[i];
  const std::string triple(3, quote);
  if (s.substr(i, 3) == triple) {
    for (size_t j = i + 3; j < s.size();) {
      if (quote == '"' && s[j] == '\\') {
        j += 2;
      } else if (s.substr(j, 3) == triple) {
        j += 3;
        // A multi-line string may end with one or two quotes of its own before the delimiter.
        for (int extra = 0; extra < 2 && j < s.size() && s[j] == quote; ++extra) ++j;
        return j;
      } else {
        ++j;
      }
    }
    return kNpos;
  }
  for (size_t j = i + 1; j < s.size() && s[j] != '\n';) {
    if (quote == '"' && s[j] == '\\') {
      j += 2;
    } else if (s[j] == quote) {
      return j + 1;
    } else {
      ++j;
    }
  }
  return kNpos;
}

// For the array whose '[' is at `open`: the offset of the last character that is not
// whitespace or comment before its closing ']' (the '[' itself for an empty array).
std::optional<size_t> LastSignificantInArray(absl::string_view s, size_t open) {
  int depth = 0;
  size_t last = open;
  for (size_t i = open; i < s.size();) {
    const char c = s[i];
    if (c == '#') {
      i = s.find('\n', i);
      if (i == kNpos) return std::nullopt;
    } else if (c == '"' || c == '\'') {
      const size_t end = SkipString(s, i);
      if (end == kNpos) return std::nullopt;
      last = end - 1;
      i = end;
    } else {
      if (c == '[') ++depth;
      if (c == ']' && --depth == 0) return last;
      if (c != ' ' && c != '\t' && c != '\r' && c != '\n') last = i;
      ++i;
    }
  }
  return std::nullopt;
}

std::string Quoted(const fs::path& path) { return absl::StrCat("\"", path.string(), "\""); }

// Checks that `edited` means `original` plus `entry` at the end of imports, and nothing else.
absl::Status VerifyEdit(absl::string_view original, absl::string_view edited, const fs::path& file,
                        const fs::path& entry) {
  const absl::Status failed = absl::InternalError(
      absl::StrCat(file.string(), ": could not add ", Quoted(entry),
                   " to imports without changing anything else; add it by hand"));
  GPUOP_ASSIGN_OR_RETURN(toml::table before, ParseToml(original, file));
  absl::StatusOr<toml::table> after = ParseToml(edited, file);
  if (!after.ok()) return failed;
  toml::array expected;
  if (const toml::array* imports = before["imports"].as_array()) expected = *imports;
  expected.push_back(entry.string());
  const toml::array* got = (*after)["imports"].as_array();
  if (got == nullptr || *got != expected) return failed;
  before.erase("imports");
  after->erase("imports");
  if (before != *after) return failed;
  return absl::OkStatus();
}

// Offset of the first line that is neither blank nor a comment, or the end of `content`.
size_t AfterOpeningComments(absl::string_view content) {
  size_t pos = 0;
  while (pos < content.size()) {
    const size_t first = content.find_first_not_of(" \t\r", pos);
    if (first == kNpos) return content.size();
    if (content[first] != '#' && content[first] != '\n') return pos;
    const size_t newline = content.find('\n', first);
    if (newline == kNpos) return content.size();
    pos = newline + 1;
  }
  return pos;
}

// A new `imports = [...]` line: after the line of the `version` key, or without one (a version 1
// file) where the file's opening comments end, ahead of any table.
absl::StatusOr<std::string> InsertImportsLine(absl::string_view content, const toml::node* version,
                                              const fs::path& file, const fs::path& entry) {
  const bool crlf = absl::StrContains(content, "\r\n");
  const std::string eol = crlf ? "\r\n" : "\n";
  const std::string line = absl::StrCat("imports = [", Quoted(entry), "]", eol);
  if (version == nullptr) {
    size_t at = AfterOpeningComments(content);
    std::string before(content.substr(0, at));
    if (!before.empty() && before.back() != '\n') absl::StrAppend(&before, eol);
    return absl::StrCat(before, line, content.substr(at));
  }
  const std::optional<size_t> line_start = OffsetOf(content, version->source().begin.line, 1);
  if (!line_start) return absl::InternalError(absl::StrCat(file.string(), ": version not found"));
  const size_t newline = content.find('\n', *line_start);
  if (newline == kNpos) return absl::StrCat(content, eol, line);
  return absl::StrCat(content.substr(0, newline + 1), line, content.substr(newline + 1));
}

// `entry` appended to the existing array `imports`, just after its last element.
absl::StatusOr<std::string> AppendToImports(absl::string_view content, const toml::node& imports,
                                            const fs::path& file, const fs::path& entry) {
  const toml::source_position begin = imports.source().begin;
  const std::optional<size_t> open = OffsetOf(content, begin.line, begin.column);
  const absl::Status failed = absl::InternalError(
      absl::StrCat(Where(file, imports), ": could not locate the imports array; add ",
                   Quoted(entry), " to it by hand"));
  if (!open || *open >= content.size() || content[*open] != '[') return failed;
  const std::optional<size_t> last = LastSignificantInArray(content, *open);
  if (!last) return failed;
  std::string insertion;
  if (content[*last] == '[') {
    insertion = Quoted(entry);
  } else if (content[*last] == ',') {
    insertion = absl::StrCat(" ", Quoted(entry));
  } else {
    insertion = absl::StrCat(", ", Quoted(entry));
  }
  return absl::StrCat(content.substr(0, *last + 1), insertion, content.substr(*last + 1));
}

}  // namespace

bool ImportsCover(const std::vector<std::string>& imports, const fs::path& main_file,
                  const fs::path& drop_in) {
  for (const std::string& entry : imports) {
    fs::path pattern = entry;
    if (pattern.is_relative()) pattern = main_file.parent_path() / pattern;
    pattern = pattern.lexically_normal();
    if (fnmatch(pattern.c_str(), drop_in.c_str(), FNM_PATHNAME) == 0) return true;
  }
  return false;
}

absl::StatusOr<std::string> AddContainerdImport(absl::string_view content, const fs::path& file) {
  GPUOP_ASSIGN_OR_RETURN(const ContainerdConfig config, InspectContainerdConfig(content, file));
  if (ImportsCover(config.imports, file, kContainerdDropInPath)) return std::string(content);
  const fs::path entry = kContainerdImportEntry;
  GPUOP_ASSIGN_OR_RETURN(const toml::table table, ParseToml(content, file));
  std::string edited;
  if (const toml::node* imports = table.get("imports"); imports != nullptr) {
    GPUOP_ASSIGN_OR_RETURN(edited, AppendToImports(content, *imports, file, entry));
  } else {
    GPUOP_ASSIGN_OR_RETURN(edited, InsertImportsLine(content, table.get("version"), file, entry));
  }
  GPUOP_RETURN_IF_ERROR(VerifyEdit(content, edited, file, entry));
  return edited;
}

}  // namespace gpuop::agent::runtime
