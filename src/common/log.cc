#include "common/log.h"

#include <atomic>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace gpuop::common {
namespace {

std::atomic<LogFormat> g_format{LogFormat::kText};
std::atomic<LogLevel> g_level{LogLevel::kInfo};

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

// A value quoted when it would not read back as one token.
std::string TextValue(absl::string_view value) {
  if (!value.empty() && value.find_first_of(" \"=\n\t") == absl::string_view::npos) {
    return std::string(value);
  }
  return nlohmann::json(std::string(value)).dump();
}

}  // namespace

void SetLogFormat(LogFormat format) { g_format = format; }
void SetLogLevel(LogLevel level) { g_level = level; }

bool ParseLogFormat(absl::string_view name, LogFormat& format) {
  if (name == "text") {
    format = LogFormat::kText;
  } else if (name == "json") {
    format = LogFormat::kJson;
  } else {
    return false;
  }
  return true;
}

std::string FormatLogRecord(LogFormat format, absl::string_view timestamp, LogLevel level,
                            absl::string_view logger, absl::string_view message,
                            const LogFields& fields) {
  if (format == LogFormat::kJson) {
    nlohmann::ordered_json record = {
        {"ts", timestamp}, {"level", LevelName(level)}, {"logger", logger}, {"msg", message}};
    for (const auto& [key, value] : fields) record[key] = value;
    return record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  std::string line = absl::StrCat(timestamp, " ", LevelName(level), " ", logger, ": ", message);
  for (const auto& [key, value] : fields) absl::StrAppend(&line, " ", key, "=", TextValue(value));
  return line;
}

void Log(LogLevel level, absl::string_view logger, absl::string_view message,
         const LogFields& fields) {
  if (level < g_level.load()) return;
  const std::string timestamp =
      absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone());
  std::string line =
      FormatLogRecord(g_format.load(), timestamp, level, logger, message, fields) + "\n";
  const char* data = line.data();
  size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, data, left);
    if (n <= 0) return;
    data += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace gpuop::common
