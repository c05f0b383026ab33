#include "agent/cdi/inject/runc_log.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "agent/cdi/hook/root_dir.h"

namespace gpuop::agent::cdi::inject {

std::string FormatRuncLogLine(const std::string& message, std::time_t time) {
  std::tm utc{};
  ::gmtime_r(&time, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &utc);
  nlohmann::ordered_json line = {{"level", "error"}, {"msg", message}, {"time", stamp}};
  return line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

Status AppendToLog(const std::string& path, const std::string& line) {
  hook::Fd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644));
  if (!fd.valid()) {
    return Status::Error("open the runc log " + path + ": " + std::strerror(errno), errno);
  }
  // One write with O_APPEND: the line is not interleaved with another writer's.
  const ssize_t n = ::write(fd.get(), line.data(), line.size());
  if (n != static_cast<ssize_t>(line.size())) {
    return Status::Error(
        "write the runc log " + path + ": " + (n < 0 ? std::strerror(errno) : "short write"),
        n < 0 ? errno : 0);
  }
  return Status::Ok();
}

}  // namespace gpuop::agent::cdi::inject
