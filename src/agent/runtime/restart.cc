#include "agent/runtime/restart.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <system_error>

#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/files.h"
#include "common/process.h"
#include "common/status_macros.h"

namespace gpuop::agent::runtime {
namespace {

namespace fs = std::filesystem;

struct Daemon {
  std::string unit;  // systemd unit
  std::string comm;  // process name
  std::vector<fs::path> sockets;
};

Daemon DaemonOf(Runtime runtime) {
  switch (runtime) {
    case Runtime::kContainerd:
      return {"containerd",
              "containerd",
              {"/run/containerd/containerd.sock", "/var/run/containerd/containerd.sock"}};
    case Runtime::kCrio:
      return {"crio", "crio", {"/run/crio/crio.sock", "/var/run/crio/crio.sock"}};
    case Runtime::kDocker:
      return {"docker", "dockerd", {"/run/docker.sock", "/var/run/docker.sock"}};
  }
  return {};
}

RestartMode ModeOf(const RestartOptions& options, Runtime runtime) {
  switch (runtime) {
    case Runtime::kContainerd:
      return options.containerd;
    case Runtime::kCrio:
      return options.crio;
    case Runtime::kDocker:
      return options.docker;
  }
  return RestartMode::kNone;
}

bool IsHostRoot(const fs::path& root) { return root.lexically_normal() == "/"; }

// sd_booted(3): systemd runs as the host's init when /run/systemd/system is a directory.
bool SystemdBooted(const fs::path& host_root) {
  std::error_code ec;
  return fs::is_directory(host_root / "run/systemd/system", ec);
}

}  // namespace

absl::Status SubprocessRunner::Run(const std::vector<std::string>& argv, absl::Duration timeout) {
  const std::string command = absl::StrJoin(argv, " ");
  absl::StatusOr<common::Subprocess> child = common::Subprocess::Spawn({.argv = argv});
  if (!child.ok()) {
    return absl::Status(child.status().code(),
                        absl::StrCat("run ", command, ": ", child.status().message()));
  }
  const absl::StatusOr<int> wait_status = child->Wait(timeout);
  if (!wait_status.ok()) {
    child->Stop(absl::Seconds(5)).IgnoreError();
    return absl::DeadlineExceededError(
        absl::StrCat(command, ": did not finish within ", absl::FormatDuration(timeout)));
  }
  if (!WIFEXITED(*wait_status) || WEXITSTATUS(*wait_status) != 0) {
    return absl::UnavailableError(
        absl::StrCat(command, ": ", common::DescribeWaitStatus(*wait_status)));
  }
  return absl::OkStatus();
}

absl::Status KillSignaller::Signal(pid_t pid, int signal) {
  if (kill(pid, signal) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("send signal ", signal, " to pid ", pid));
  }
  return absl::OkStatus();
}

absl::StatusOr<pid_t> SocketPeerPid(const fs::path& socket_path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string& path = socket_path.native();
  if (path.size() >= sizeof(address.sun_path)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": path too long for a unix socket address"));
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return absl::ErrnoToStatus(errno, "create unix socket");
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    const int err = errno;
    close(fd);
    const std::string what = absl::StrCat("connect to ", path, ": ", std::strerror(err));
    if (err == ECONNREFUSED || err == EAGAIN) return absl::UnavailableError(what);
    return absl::ErrnoToStatus(err, absl::StrCat("connect to ", path));
  }
  ucred credentials{};
  socklen_t length = sizeof(credentials);
  const int rc = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length);
  const int err = errno;
  close(fd);
  if (rc != 0) return absl::ErrnoToStatus(err, absl::StrCat("SO_PEERCRED on ", path));
  if (credentials.pid <= 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(path,
                     ": the listening process is not visible from this PID namespace "
                     "(run the agent with hostPID)"));
  }
  return credentials.pid;
}

absl::Status ValidateRestartOptions(const RestartOptions& options) {
  if (options.crio == RestartMode::kSignal) {
    return absl::InvalidArgumentError(
        "restart options: CRI-O does not reload runtime definitions on SIGHUP; use systemd or "
        "none");
  }
  if (!options.host_root.is_absolute() || !options.proc_root.is_absolute()) {
    return absl::InvalidArgumentError("restart options: host_root and proc_root must be absolute");
  }
  if (options.command_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("restart options: command_timeout must be positive");
  }
  return absl::OkStatus();
}

absl::StatusOr<RestartMode> ParseRestartMode(const std::string& text) {
  if (text == "auto") return RestartMode::kAuto;
  if (text == "systemd") return RestartMode::kSystemd;
  if (text == "signal") return RestartMode::kSignal;
  if (text == "none") return RestartMode::kNone;
  return absl::InvalidArgumentError(
      absl::StrCat("restart mode \"", text, "\": want auto, systemd, signal or none"));
}

absl::StatusOr<std::string> HostRestarter::Restart(Runtime runtime) {
  const Daemon daemon = DaemonOf(runtime);
  RestartMode mode = ModeOf(options_, runtime);
  if (mode == RestartMode::kAuto) {
    if (SystemdBooted(options_.host_root)) {
      mode = RestartMode::kSystemd;
    } else if (runtime == Runtime::kCrio) {
      return absl::FailedPreconditionError(
          "crio: the host was not booted with systemd and CRI-O does not reload its runtimes on "
          "SIGHUP; restart it yourself (restart mode none)");
    } else {
      mode = RestartMode::kSignal;
    }
  }
  switch (mode) {
    case RestartMode::kAuto:
      break;
    case RestartMode::kNone:
      return std::string("no restart (restart mode none)");
    case RestartMode::kSystemd:
      // docker.service reloads with SIGHUP; a restart would stop every container without
      // live-restore.
      return Systemctl(runtime == Runtime::kDocker ? "reload" : "restart", daemon.unit);
    case RestartMode::kSignal:
      return SignalDaemon(runtime);
  }
  return absl::InternalError("unknown restart mode");
}

absl::StatusOr<std::string> HostRestarter::Systemctl(const std::string& verb,
                                                     const std::string& unit) {
  std::vector<std::string> argv;
  if (IsHostRoot(options_.host_root)) {
    for (const char* candidate : {"/usr/bin/systemctl", "/bin/systemctl"}) {
      if (access(candidate, X_OK) == 0) {
        argv = {candidate, verb, unit};
        break;
      }
    }
    if (argv.empty()) return absl::FailedPreconditionError("systemctl not found on this host");
  } else {
    argv = {options_.chroot_binary.string(), options_.host_root.string(), "systemctl", verb, unit};
  }
  if (absl::Status status = runner_.Run(argv, options_.command_timeout); !status.ok()) {
    return absl::Status(status.code(),
                        absl::StrCat("systemctl ", verb, " ", unit, ": ", status.message()));
  }
  return absl::StrCat(verb == "reload" ? "reloaded " : "restarted ", unit, " (systemctl)");
}

absl::StatusOr<std::string> HostRestarter::SignalDaemon(Runtime runtime) {
  const Daemon daemon = DaemonOf(runtime);
  GPUOP_ASSIGN_OR_RETURN(const pid_t pid, FindDaemon(daemon.comm, daemon.sockets));
  if (absl::Status status = signaller_.Signal(pid, SIGHUP); !status.ok()) {
    return absl::Status(status.code(),
                        absl::StrCat("signal ", daemon.comm, ": ", status.message()));
  }
  if (runtime == Runtime::kContainerd) {
    return absl::StrCat("restarted containerd (SIGHUP to pid ", pid,
                        "; its supervisor starts it again)");
  }
  return absl::StrCat("reloaded ", daemon.comm, " (SIGHUP to pid ", pid, ")");
}

absl::StatusOr<pid_t> HostRestarter::FindDaemon(const std::string& comm,
                                                const std::vector<fs::path>& sockets) const {
  auto comm_of = [this](pid_t pid) -> std::string {
    absl::StatusOr<std::string> name =
        common::ReadFile(options_.proc_root / std::to_string(pid) / "comm");
    return name.ok() ? std::string(absl::StripAsciiWhitespace(*name)) : std::string();
  };
  std::vector<std::string> problems;
  std::error_code ec;
  // Under a mounted host root, var/run is usually an absolute link to /run, which would resolve
  // in this container; the /run entry covers it.
  const bool var_run_is_link = fs::is_symlink(options_.host_root / "var/run", ec);
  for (const fs::path& socket : sockets) {
    if (var_run_is_link && socket.string().starts_with("/var/run/")) continue;
    const fs::path path = options_.host_root / socket.relative_path();
    if (!fs::exists(path, ec)) continue;
    absl::StatusOr<pid_t> pid = SocketPeerPid(path);
    if (!pid.ok()) {
      problems.push_back(std::string(pid.status().message()));
      continue;
    }
    const std::string name = comm_of(*pid);
    if (*pid > 1 && name == comm) return *pid;
    problems.push_back(absl::StrCat(socket.string(), " is held by pid ", *pid, " (",
                                    name.empty() ? "unknown" : name, "), not ", comm));
  }
  std::vector<pid_t> matches;
  fs::directory_iterator it(options_.proc_root, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    int pid = 0;
    if (absl::SimpleAtoi(it->path().filename().string(), &pid) && pid > 1 && comm_of(pid) == comm) {
      matches.push_back(pid);
    }
  }
  if (matches.size() == 1) return matches.front();
  if (matches.empty()) {
    problems.push_back(
        absl::StrCat("no process named ", comm, " in ", options_.proc_root.string()));
  } else {
    problems.push_back(absl::StrCat("several processes named ", comm, " (pids ",
                                    absl::StrJoin(matches, ", "), ")"));
  }
  return absl::FailedPreconditionError(
      absl::StrCat("find the ", comm, " process to signal: ", absl::StrJoin(problems, "; ")));
}

}  // namespace gpuop::agent::runtime
