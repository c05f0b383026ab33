#include "agent/exporter/process_stats.h"

#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace gpuop::agent::exporter {
namespace {

// Reads a small /proc file into `buffer`; returns what was read, "" on failure.
absl::string_view ReadSmallFile(const char* path, char* buffer, size_t size) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  size_t used = 0;
  while (used < size) {
    const ssize_t n = read(fd, buffer + used, size - used);
    if (n <= 0) break;
    used += static_cast<size_t>(n);
  }
  close(fd);
  return absl::string_view(buffer, used);
}

}  // namespace

std::optional<ProcessStats> ParseProcessStats(absl::string_view stat, absl::string_view statm,
                                              long page_size, long clock_ticks) {
  // The command name (field 2) is in parentheses and may itself contain spaces and ')'.
  const size_t close_paren = stat.rfind(')');
  if (close_paren == absl::string_view::npos || page_size <= 0 || clock_ticks <= 0) {
    return std::nullopt;
  }
  // After "pid (comm) ": state is field 3, utime field 14, stime field 15.
  const std::vector<absl::string_view> fields =
      absl::StrSplit(stat.substr(close_paren + 1), ' ', absl::SkipEmpty());
  uint64_t utime = 0, stime = 0;
  if (fields.size() < 13 || !absl::SimpleAtoi(fields[11], &utime) ||
      !absl::SimpleAtoi(fields[12], &stime)) {
    return std::nullopt;
  }
  const std::vector<absl::string_view> pages = absl::StrSplit(statm, ' ', absl::SkipEmpty());
  uint64_t resident = 0;
  if (pages.size() < 2 || !absl::SimpleAtoi(pages[1], &resident)) return std::nullopt;
  return ProcessStats{
      .resident_memory_bytes = static_cast<double>(resident) * static_cast<double>(page_size),
      .cpu_seconds = static_cast<double>(utime + stime) / static_cast<double>(clock_ticks)};
}

std::optional<ProcessStats> ReadProcessStats() {
  char stat[1024], statm[256];
  return ParseProcessStats(ReadSmallFile("/proc/self/stat", stat, sizeof(stat)),
                           ReadSmallFile("/proc/self/statm", statm, sizeof(statm)),
                           sysconf(_SC_PAGESIZE), sysconf(_SC_CLK_TCK));
}

}  // namespace gpuop::agent::exporter
