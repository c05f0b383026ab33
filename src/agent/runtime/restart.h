#ifndef GPUOP_AGENT_RUNTIME_RESTART_H_
#define GPUOP_AGENT_RUNTIME_RESTART_H_

// Making a container runtime load a changed configuration: `systemctl restart|reload` in the
// host, or a signal to the daemon found through its socket's peer credentials.

#include <filesystem>
#include <string>
#include <vector>

#include <sys/types.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/runtime/runtime.h"

namespace gpuop::agent::runtime {

// Makes a runtime load its configuration files again. Implementations: HostRestarter; tests use
// RecordingRestarter (fake_restarter.h).
class Restarter {
 public:
  virtual ~Restarter() = default;
  // Returns what was done, for reports: "restarted containerd (systemctl)".
  [[nodiscard]] virtual absl::StatusOr<std::string> Restart(Runtime runtime) = 0;
};

// Runs a command to completion. Implementations must not use a shell.
class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // OK only when argv[0] (a path) ran and exited 0 within `timeout`; a child still running then
  // is stopped and DeadlineExceeded returned.
  [[nodiscard]] virtual absl::Status Run(const std::vector<std::string>& argv,
                                         absl::Duration timeout) = 0;
};

// CommandRunner over common::Subprocess; the child's output goes to this process's.
class SubprocessRunner final : public CommandRunner {
 public:
  absl::Status Run(const std::vector<std::string>& argv, absl::Duration timeout) override;
};

// Sends signals to processes.
class Signaller {
 public:
  virtual ~Signaller() = default;
  [[nodiscard]] virtual absl::Status Signal(pid_t pid, int signal) = 0;
};

// Signaller over kill(2).
class KillSignaller final : public Signaller {
 public:
  absl::Status Signal(pid_t pid, int signal) override;
};

// The PID of the process that listens on the unix socket at `socket_path`, from the
// SO_PEERCRED credentials of a connection to it (the listener's credentials at listen(), in this
// process's PID namespace). Never blocks: Unavailable when the socket refuses or its backlog is
// full; FailedPrecondition when the listener is not visible from this PID namespace (the agent
// needs hostPID) or the path is too long for a socket address.
[[nodiscard]] absl::StatusOr<pid_t> SocketPeerPid(const std::filesystem::path& socket_path);

enum class RestartMode {
  // systemctl restart <unit>; for Docker, systemctl reload (its unit reloads with SIGHUP, and a
  // restart would stop every container without live-restore).
  kSystemd,
  // SIGHUP to the daemon. dockerd reloads its runtimes. containerd does not catch SIGHUP and
  // exits; only a unit with Restart=always (upstream containerd.service) starts it again, with
  // the new configuration and running containers kept. Use it for containerd only there.
  kSignal,
  // Nothing; the operator restarts the runtime.
  kNone,
  // kSystemd where the host was booted with systemd (<host_root>/run/systemd/system is a
  // directory, sd_booted(3)'s test), kSignal otherwise: a node whose runtime another supervisor
  // keeps running. CRI-O without systemd is an error (see kSignal).
  kAuto,
};

// "auto", "systemd", "signal" or "none"; InvalidArgument naming the value otherwise.
[[nodiscard]] absl::StatusOr<RestartMode> ParseRestartMode(const std::string& text);

struct RestartOptions {
  // Where the host's root is mounted. Not "/" means the agent runs in a container: systemctl runs
  // through chroot into it, and sockets are found under it.
  std::filesystem::path host_root = "/";
  // The proc filesystem that shows the daemons (the host's /proc when the agent has hostPID).
  std::filesystem::path proc_root = "/proc";
  // Per runtime. CRI-O re-reads only part of its configuration on SIGHUP, so it takes kSystemd
  // or kNone.
  RestartMode containerd = RestartMode::kAuto;
  RestartMode crio = RestartMode::kAuto;
  RestartMode docker = RestartMode::kSignal;
  std::filesystem::path chroot_binary = "/usr/sbin/chroot";
  absl::Duration command_timeout = absl::Minutes(2);
};

// OK when `options` can be used; InvalidArgument naming the problem otherwise.
[[nodiscard]] absl::Status ValidateRestartOptions(const RestartOptions& options);

// The real Restarter. In signal mode the daemon's PID comes from its socket (SocketPeerPid) and
// must belong to a process whose name (/proc/<pid>/comm) is the daemon's ("containerd",
// "dockerd"); a socket held by anything else, such as systemd for a socket-activated docker.sock,
// is not signalled: the daemon is then looked for by name in the proc filesystem, and
// exactly one match is required. Not thread-safe.
class HostRestarter final : public Restarter {
 public:
  // `runner` and `signaller` must outlive this object. Call ValidateRestartOptions first.
  HostRestarter(RestartOptions options, CommandRunner& runner, Signaller& signaller)
      : options_(std::move(options)), runner_(runner), signaller_(signaller) {}

  absl::StatusOr<std::string> Restart(Runtime runtime) override;

 private:
  absl::StatusOr<std::string> Systemctl(const std::string& verb, const std::string& unit);
  absl::StatusOr<std::string> SignalDaemon(Runtime runtime);
  absl::StatusOr<pid_t> FindDaemon(const std::string& comm,
                                   const std::vector<std::filesystem::path>& sockets) const;

  RestartOptions options_;
  CommandRunner& runner_;
  Signaller& signaller_;
};

}  // namespace gpuop::agent::runtime

#endif  // GPUOP_AGENT_RUNTIME_RESTART_H_
