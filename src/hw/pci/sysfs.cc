#include "hw/pci/sysfs.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <system_error>

#include <fcntl.h>
#include <unistd.h>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace gpuop::hw::sysfs {
namespace {

constexpr size_t kMaxAttributeBytes = size_t{1} << 20;

template <typename T>
std::optional<T> ParseWithBase(absl::string_view text, int base) {
  text = absl::StripAsciiWhitespace(text);
  if (text.empty()) return std::nullopt;
  T value{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value, base);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

absl::Status Unparseable(const std::string& path, absl::string_view what,
                         absl::string_view content) {
  return absl::DataLossError(
      absl::StrCat("read ", path, ": expected ", what, ", found \"",
                   absl::CEscape(content.substr(0, std::min<size_t>(content.size(), 64))), "\""));
}

}  // namespace

std::optional<int64_t> ParseInt(absl::string_view text) { return ParseWithBase<int64_t>(text, 10); }

std::optional<uint64_t> ParseUint(absl::string_view text) {
  return ParseWithBase<uint64_t>(text, 10);
}

std::optional<uint64_t> ParseHex(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  if (!absl::ConsumePrefix(&text, "0x")) absl::ConsumePrefix(&text, "0X");
  return ParseWithBase<uint64_t>(text, 16);
}

std::string Join(absl::string_view root, absl::string_view relative) {
  while (absl::ConsumeSuffix(&root, "/")) {
  }
  while (absl::ConsumePrefix(&relative, "/")) {
  }
  return absl::StrCat(root, "/", relative);
}

absl::StatusOr<std::string> ReadString(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
  std::string content;
  char buffer[4096];
  while (content.size() < kMaxAttributeBytes) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      ::close(fd);
      return absl::ErrnoToStatus(error, absl::StrCat("read ", path));
    }
    if (n == 0) break;
    content.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return std::string(absl::StripAsciiWhitespace(content));
}

absl::StatusOr<int64_t> ReadInt(const std::string& path) {
  absl::StatusOr<std::string> text = ReadString(path);
  if (!text.ok()) return text.status();
  std::optional<int64_t> value = ParseInt(*text);
  if (!value) return Unparseable(path, "a decimal integer", *text);
  return *value;
}

absl::StatusOr<uint64_t> ReadUint(const std::string& path) {
  absl::StatusOr<std::string> text = ReadString(path);
  if (!text.ok()) return text.status();
  std::optional<uint64_t> value = ParseUint(*text);
  if (!value) return Unparseable(path, "a non-negative decimal integer", *text);
  return *value;
}

absl::StatusOr<uint64_t> ReadHex(const std::string& path) {
  absl::StatusOr<std::string> text = ReadString(path);
  if (!text.ok()) return text.status();
  std::optional<uint64_t> value = ParseHex(*text);
  if (!value) return Unparseable(path, "a hexadecimal integer", *text);
  return *value;
}

std::optional<int64_t> ReadOptionalInt(const std::string& path) {
  absl::StatusOr<int64_t> value = ReadInt(path);
  return value.ok() ? std::optional<int64_t>(*value) : std::nullopt;
}

std::optional<uint64_t> ReadOptionalUint(const std::string& path) {
  absl::StatusOr<uint64_t> value = ReadUint(path);
  return value.ok() ? std::optional<uint64_t>(*value) : std::nullopt;
}

std::optional<std::string> ReadOptionalString(const std::string& path) {
  absl::StatusOr<std::string> value = ReadString(path);
  return value.ok() ? std::optional<std::string>(*std::move(value)) : std::nullopt;
}

absl::StatusOr<std::string> LinkBasename(const std::string& path) {
  char target[4096];
  const ssize_t n = ::readlink(path.c_str(), target, sizeof(target) - 1);
  if (n < 0) return absl::ErrnoToStatus(errno, absl::StrCat("readlink ", path));
  absl::string_view view(target, static_cast<size_t>(n));
  while (absl::ConsumeSuffix(&view, "/")) {
  }
  const size_t slash = view.rfind('/');
  return std::string(slash == absl::string_view::npos ? view : view.substr(slash + 1));
}

absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path) {
  std::error_code ec;
  std::filesystem::directory_iterator it(path, ec);
  if (ec) return absl::ErrnoToStatus(ec.value(), absl::StrCat("list ", path));
  std::vector<std::string> names;
  for (const std::filesystem::directory_iterator end; it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  if (ec) return absl::ErrnoToStatus(ec.value(), absl::StrCat("list ", path));
  std::sort(names.begin(), names.end());
  return names;
}

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

absl::Status WriteString(const std::string& path, absl::string_view content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open ", path, " for writing"));
  ssize_t n;
  do {
    n = ::write(fd, content.data(), content.size());
  } while (n < 0 && errno == EINTR);
  const int write_error = errno;
  if (::close(fd) != 0 && n >= 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("close ", path));
  }
  if (n < 0) {
    return absl::ErrnoToStatus(write_error,
                               absl::StrCat("write \"", absl::CEscape(content), "\" to ", path));
  }
  if (static_cast<size_t>(n) != content.size()) {
    return absl::DataLossError(
        absl::StrCat("write ", path, ": short write (", n, " of ", content.size(), " bytes)"));
  }
  return absl::OkStatus();
}

}  // namespace gpuop::hw::sysfs
