#include "common/http/internal/request_parser.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace gpuop::http::internal {
namespace {

using Kind = ParseResult::Kind;

bool IsTokenChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
         absl::string_view("!#$%&'*+-.^_`|~").find(c) != absl::string_view::npos;
}

bool IsToken(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

// Visible ASCII and obs-text, as request targets may contain.
bool IsTargetChar(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u > 0x20 && u != 0x7f;
}

// Field values: visible characters, obs-text, space and tab.
bool IsFieldValueChar(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u == '\t' || (u >= 0x20 && u != 0x7f);
}

ParseResult Error(int status, std::string reason) {
  return ParseResult{.kind = Kind::kError, .status = status, .reason = std::move(reason)};
}

absl::string_view TrimWhitespace(absl::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

ParseResult ParseRequestLine(absl::string_view line, Request& request) {
  const size_t first = line.find(' ');
  if (first == absl::string_view::npos) return Error(400, "malformed request line");
  const size_t second = line.find(' ', first + 1);
  if (second == absl::string_view::npos) return Error(400, "malformed request line");
  const absl::string_view method = line.substr(0, first);
  const absl::string_view target = line.substr(first + 1, second - first - 1);
  const absl::string_view version = line.substr(second + 1);
  if (!IsToken(method)) return Error(400, "malformed method");
  if (target.empty() || target.front() != '/') {
    return Error(400, "the request target must be a path (origin-form)");
  }
  for (char c : target) {
    if (!IsTargetChar(c)) return Error(400, "malformed request target");
  }
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" ||
      !absl::ascii_isdigit(static_cast<unsigned char>(version[5])) || version[6] != '.' ||
      !absl::ascii_isdigit(static_cast<unsigned char>(version[7]))) {
    return Error(400, "malformed HTTP version");
  }
  if (version[5] != '1') return Error(505, "only HTTP/1.x is supported");
  request.method = std::string(method);
  request.target = std::string(target);
  const size_t question = target.find('?');
  request.path = std::string(target.substr(0, question));
  request.query =
      question == absl::string_view::npos ? "" : std::string(target.substr(question + 1));
  request.version_minor = version[7] - '0';
  return ParseResult{.kind = Kind::kComplete};
}

ParseResult ParseField(absl::string_view line, size_t max_fields, Request& request) {
  if (line.front() == ' ' || line.front() == '\t') {
    return Error(400, "obsolete line folding is not accepted");
  }
  const size_t colon = line.find(':');
  if (colon == absl::string_view::npos) return Error(400, "malformed header field");
  const absl::string_view name = line.substr(0, colon);
  if (!IsToken(name)) return Error(400, "malformed header field name");
  const absl::string_view value = TrimWhitespace(line.substr(colon + 1));
  for (char c : value) {
    if (!IsFieldValueChar(c)) return Error(400, "control character in a header field");
  }
  if (request.headers.size() >= max_fields) {
    return Error(431, absl::StrCat("more than ", max_fields, " header fields"));
  }
  request.headers.emplace_back(absl::AsciiStrToLower(name), std::string(value));
  return ParseResult{.kind = Kind::kComplete};
}

}  // namespace

ParseResult ParseRequestHead(absl::string_view data, size_t max_fields, Request& request) {
  request = Request{};
  size_t pos = 0;
  // Servers should ignore empty lines before the request line (RFC 9112 §2.2).
  while (pos < data.size() && (data[pos] == '\r' || data[pos] == '\n')) ++pos;
  bool have_request_line = false;
  while (true) {
    const size_t newline = data.find('\n', pos);
    if (newline == absl::string_view::npos) return ParseResult{.kind = Kind::kIncomplete};
    absl::string_view line = data.substr(pos, newline - pos);
    pos = newline + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find('\r') != absl::string_view::npos || line.find('\0') != absl::string_view::npos) {
      return Error(400, "stray CR or NUL in the request head");
    }
    if (!have_request_line) {
      ParseResult result = ParseRequestLine(line, request);
      if (result.kind == Kind::kError) return result;
      have_request_line = true;
      continue;
    }
    if (line.empty()) return ParseResult{.kind = Kind::kComplete, .consumed = pos};
    ParseResult result = ParseField(line, max_fields, request);
    if (result.kind == Kind::kError) return result;
  }
}

absl::string_view ReasonPhrase(int status) {
  static constexpr std::pair<int, absl::string_view> kPhrases[] = {
      {200, "OK"},
      {204, "No Content"},
      {400, "Bad Request"},
      {403, "Forbidden"},
      {404, "Not Found"},
      {405, "Method Not Allowed"},
      {408, "Request Timeout"},
      {413, "Content Too Large"},
      {431, "Request Header Fields Too Large"},
      {500, "Internal Server Error"},
      {503, "Service Unavailable"},
      {505, "HTTP Version Not Supported"},
  };
  for (const auto& [code, phrase] : kPhrases) {
    if (code == status) return phrase;
  }
  return "Unknown";
}

}  // namespace gpuop::http::internal
