#ifndef GPUOP_COMMON_LOG_H_
#define GPUOP_COMMON_LOG_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace gpuop::common {

// Structured logs on stderr, one line per record: `text` for people
// ("2026-11-29T10:00:00.123Z info  operator: applied operands applied=3 pruned=1") or `json` for
// log pipelines ({"ts":"...","level":"info","logger":"operator","msg":"applied operands",
// "applied":"3","pruned":"1"}). Thread-safe; a line is written with one write(2).
enum class LogLevel { kDebug, kInfo, kWarning, kError };
enum class LogFormat { kText, kJson };

using LogFields = std::vector<std::pair<std::string, std::string>>;

void SetLogFormat(LogFormat format);
void SetLogLevel(LogLevel level);
// "text" or "json"; false for anything else.
bool ParseLogFormat(absl::string_view name, LogFormat& format);

void Log(LogLevel level, absl::string_view logger, absl::string_view message,
         const LogFields& fields = {});

// The record as Log() would write it (without the newline), for tests.
std::string FormatLogRecord(LogFormat format, absl::string_view timestamp, LogLevel level,
                            absl::string_view logger, absl::string_view message,
                            const LogFields& fields);

}  // namespace gpuop::common

#endif  // GPUOP_COMMON_LOG_H_
