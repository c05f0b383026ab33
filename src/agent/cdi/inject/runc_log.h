#ifndef GPUOP_AGENT_CDI_INJECT_RUNC_LOG_H_
#define GPUOP_AGENT_CDI_INJECT_RUNC_LOG_H_

#include <ctime>
#include <string>

#include "agent/cdi/inject/status.h"

// Errors in runc's log file. When runc fails, containerd reads the file it passed as --log (with
// --log-format json) and reports the last "error" entry's msg as the reason the container could
// not be created; the wrapper's own errors are written there the same way.
namespace gpuop::agent::cdi::inject {

// One line of runc's JSON log (logrus's format), newline-terminated:
//   {"level":"error","msg":"<message>","time":"2024-05-01T12:00:00Z"}
// `time` is written in UTC, RFC 3339.
std::string FormatRuncLogLine(const std::string& message, std::time_t time);

// Appends `line` to the log file at `path`, creating it (0644) when missing.
Status AppendToLog(const std::string& path, const std::string& line);

}  // namespace gpuop::agent::cdi::inject

#endif  // GPUOP_AGENT_CDI_INJECT_RUNC_LOG_H_
