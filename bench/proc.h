#ifndef GPUOP_BENCH_PROC_H_
#define GPUOP_BENCH_PROC_H_

// What the benchmarks read about a process from /proc.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <sys/types.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gpuop::bench {

inline std::string ReadFile(const std::filesystem::path& path) {
  std::stringstream out;
  out << std::ifstream(path).rdbuf();
  return out.str();
}

// A "Field:   123 kB" value of /proc/<pid>/status or smaps_rollup text, in KiB; 0 if absent.
inline int64_t KibField(const std::string& text, absl::string_view field) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, field) || !absl::ConsumePrefix(&line, ":")) continue;
    int64_t kib = 0;
    if (absl::SimpleAtoi(absl::StripSuffix(absl::StripAsciiWhitespace(line), " kB"), &kib)) {
      return kib;
    }
  }
  return 0;
}

// A field of /proc/<pid>/status ("VmRSS", "RssAnon", "VmHWM") in MiB.
inline double StatusMib(pid_t pid, absl::string_view field) {
  return static_cast<double>(KibField(ReadFile(absl::StrCat("/proc/", pid, "/status")), field)) /
         1024.0;
}

// CPU time of every thread of `pid`, from the scheduler's nanosecond accounting (the tick-based
// counters in /proc/<pid>/stat are too coarse for an idle process).
inline double CpuSeconds(pid_t pid) {
  double total = 0;
  std::error_code ec;
  for (const auto& task :
       std::filesystem::directory_iterator(absl::StrCat("/proc/", pid, "/task"), ec)) {
    const std::string schedstat = ReadFile(task.path() / "schedstat");
    int64_t ns = 0;
    if (absl::SimpleAtoi(schedstat.substr(0, schedstat.find(' ')), &ns)) total += ns / 1e9;
  }
  return total;
}

}  // namespace gpuop::bench

#endif  // GPUOP_BENCH_PROC_H_
