#ifndef GPUOP_AGENT_EXPORTER_PROCESS_STATS_H_
#define GPUOP_AGENT_EXPORTER_PROCESS_STATS_H_

#include <optional>

#include "absl/strings/string_view.h"

namespace gpuop::agent::exporter {

// What a process costs, as Prometheus's process_* metrics report it.
struct ProcessStats {
  double resident_memory_bytes = 0;
  double cpu_seconds = 0;  // user + system
};

// This process's resident memory and CPU time from /proc/self (two small reads). nullopt
// where /proc is not mounted or not readable.
std::optional<ProcessStats> ReadProcessStats();

// Parses the contents of /proc/<pid>/stat and /proc/<pid>/statm; nullopt when malformed. For
// tests and for measuring other processes (the benchmark).
std::optional<ProcessStats> ParseProcessStats(absl::string_view stat, absl::string_view statm,
                                              long page_size, long clock_ticks);

}  // namespace gpuop::agent::exporter

#endif  // GPUOP_AGENT_EXPORTER_PROCESS_STATS_H_
