#include "agent/runtime/restart.h"

#include <csignal>
#include <cstring>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "agent/runtime/fake_restarter.h"
#include "agent/runtime/test_util.h"

namespace gpuop::agent::runtime {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

// A unix socket bound at `path`, listening unless told otherwise, closed at the end of the test.
class UnixListener {
 public:
  explicit UnixListener(const fs::path& path, bool listen_too = true) {
    fs::create_directories(path.parent_path());
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    EXPECT_LT(path.native().size(), sizeof(address.sun_path));
    std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
    EXPECT_EQ(bind(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0)
        << std::strerror(errno);
    if (listen_too) {
      EXPECT_EQ(listen(fd_, 4), 0);
    }
  }
  ~UnixListener() { close(fd_); }

 private:
  int fd_ = -1;
};

// A proc filesystem with the given processes' names.
void PutComm(const TempRoot& proc, pid_t pid, const std::string& comm) {
  proc.Put(absl::StrCat("/", pid, "/comm"), absl::StrCat(comm, "\n"));
}

TEST(RuntimeRestartTest, SocketPeerPidFindsTheListener) {
  TempRoot root;
  const fs::path path = root / "/run/containerd/containerd.sock";
  UnixListener listener(path);
  const absl::StatusOr<pid_t> pid = SocketPeerPid(path);
  ASSERT_TRUE(pid.ok()) << pid.status();
  EXPECT_EQ(*pid, getpid());
}

TEST(RuntimeRestartTest, SocketPeerPidErrors) {
  TempRoot root;
  EXPECT_EQ(SocketPeerPid(root / "/missing.sock").status().code(), absl::StatusCode::kNotFound);
  const fs::path bound = root / "/bound.sock";
  UnixListener not_listening(bound, /*listen_too=*/false);
  EXPECT_EQ(SocketPeerPid(bound).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(SocketPeerPid(fs::path("/") / std::string(200, 'x')).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(RuntimeRestartTest, SystemdModeRunsSystemctlInTheHostRoot) {
  RecordingRunner runner;
  RecordingSignaller signaller;
  HostRestarter restarter({.host_root = "/host",
                           .containerd = RestartMode::kSystemd,
                           .crio = RestartMode::kSystemd,
                           .docker = RestartMode::kSystemd},
                          runner, signaller);
  EXPECT_EQ(*restarter.Restart(Runtime::kContainerd), "restarted containerd (systemctl)");
  EXPECT_EQ(*restarter.Restart(Runtime::kCrio), "restarted crio (systemctl)");
  EXPECT_EQ(*restarter.Restart(Runtime::kDocker), "reloaded docker (systemctl)");
  EXPECT_THAT(
      runner.commands,
      ElementsAre(ElementsAre("/usr/sbin/chroot", "/host", "systemctl", "restart", "containerd"),
                  ElementsAre("/usr/sbin/chroot", "/host", "systemctl", "restart", "crio"),
                  ElementsAre("/usr/sbin/chroot", "/host", "systemctl", "reload", "docker")));
  EXPECT_TRUE(signaller.signals.empty());
}

TEST(RuntimeRestartTest, SystemctlFailureIsReported) {
  RecordingRunner runner;
  runner.result = absl::UnavailableError("exited with code 1");
  RecordingSignaller signaller;
  HostRestarter restarter({.host_root = "/host", .containerd = RestartMode::kSystemd}, runner,
                          signaller);
  const absl::StatusOr<std::string> result = restarter.Restart(Runtime::kContainerd);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(Message(result.status()), HasSubstr("systemctl restart containerd: exited"));
}

TEST(RuntimeRestartTest, SignalModeSendsSighupToTheSocketsOwner) {
  TempRoot root;
  TempRoot proc;
  UnixListener listener(root / "/run/containerd/containerd.sock");
  PutComm(proc, getpid(), "containerd");
  RecordingRunner runner;
  RecordingSignaller signaller;
  HostRestarter restarter(
      {.host_root = root.path(), .proc_root = proc.path(), .containerd = RestartMode::kSignal},
      runner, signaller);
  const absl::StatusOr<std::string> result = restarter.Restart(Runtime::kContainerd);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(*result, absl::StrCat("restarted containerd (SIGHUP to pid ", getpid(),
                                  "; its supervisor starts it again)"));
  EXPECT_THAT(signaller.signals, ElementsAre(Pair(getpid(), SIGHUP)));
  EXPECT_TRUE(runner.commands.empty());
}

TEST(RuntimeRestartTest, SignalModeNeverSignalsAnotherProcess) {
  TempRoot root;
  TempRoot proc;
  // A socket-activated docker.sock: the listener is "systemd", not dockerd.
  UnixListener listener(root / "/run/docker.sock");
  PutComm(proc, getpid(), "systemd");
  RecordingRunner runner;
  RecordingSignaller signaller;
  HostRestarter restarter({.host_root = root.path(), .proc_root = proc.path()}, runner, signaller);
  absl::StatusOr<std::string> result = restarter.Restart(Runtime::kDocker);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(result.status()), HasSubstr("(systemd), not dockerd"));
  EXPECT_THAT(Message(result.status()), HasSubstr("no process named dockerd"));
  EXPECT_TRUE(signaller.signals.empty());

  // The daemon is then found by name, when exactly one process has it.
  PutComm(proc, 4242, "dockerd");
  result = restarter.Restart(Runtime::kDocker);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(*result, "reloaded dockerd (SIGHUP to pid 4242)");
  EXPECT_THAT(signaller.signals, ElementsAre(Pair(4242, SIGHUP)));

  PutComm(proc, 4343, "dockerd");
  result = restarter.Restart(Runtime::kDocker);
  EXPECT_THAT(Message(result.status()), HasSubstr("several processes named dockerd"));
  EXPECT_EQ(signaller.signals.size(), 1u);
}

TEST(RuntimeRestartTest, AutoModeUsesSystemdOnlyWhereTheHostBootedWithIt) {
  TempRoot root;
  TempRoot proc;
  UnixListener listener(root / "/run/containerd/containerd.sock");
  PutComm(proc, getpid(), "containerd");
  RecordingRunner runner;
  RecordingSignaller signaller;
  HostRestarter restarter({.host_root = root.path(), .proc_root = proc.path()}, runner, signaller);
  // No /run/systemd/system: containerd gets SIGHUP; CRI-O cannot be restarted that way.
  absl::StatusOr<std::string> result = restarter.Restart(Runtime::kContainerd);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(*result, HasSubstr("SIGHUP"));
  EXPECT_THAT(signaller.signals, ElementsAre(Pair(getpid(), SIGHUP)));
  result = restarter.Restart(Runtime::kCrio);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(result.status()), HasSubstr("not booted with systemd"));
  EXPECT_TRUE(runner.commands.empty());
  // Booted with systemd: systemctl, and no more signals.
  root.Put("/run/systemd/system/.keep", "");
  EXPECT_EQ(*restarter.Restart(Runtime::kContainerd), "restarted containerd (systemctl)");
  EXPECT_EQ(*restarter.Restart(Runtime::kCrio), "restarted crio (systemctl)");
  EXPECT_EQ(runner.commands.size(), 2u);
  EXPECT_EQ(signaller.signals.size(), 1u);
}

TEST(RuntimeRestartTest, ParsesRestartModes) {
  EXPECT_EQ(*ParseRestartMode("auto"), RestartMode::kAuto);
  EXPECT_EQ(*ParseRestartMode("systemd"), RestartMode::kSystemd);
  EXPECT_EQ(*ParseRestartMode("signal"), RestartMode::kSignal);
  EXPECT_EQ(*ParseRestartMode("none"), RestartMode::kNone);
  EXPECT_THAT(Message(ParseRestartMode("reboot").status()), HasSubstr("\"reboot\""));
}

TEST(RuntimeRestartTest, NoneModeDoesNothing) {
  RecordingRunner runner;
  RecordingSignaller signaller;
  HostRestarter restarter({.containerd = RestartMode::kNone}, runner, signaller);
  EXPECT_EQ(*restarter.Restart(Runtime::kContainerd), "no restart (restart mode none)");
  EXPECT_TRUE(runner.commands.empty());
  EXPECT_TRUE(signaller.signals.empty());
}

TEST(RuntimeRestartTest, ValidatesOptions) {
  EXPECT_TRUE(ValidateRestartOptions({}).ok());
  EXPECT_EQ(ValidateRestartOptions({.crio = RestartMode::kSignal}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateRestartOptions({.host_root = "host"}).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RuntimeRestartTest, SubprocessRunnerReportsExitAndTimeout) {
  SubprocessRunner runner;
  EXPECT_TRUE(runner.Run({"/bin/true"}, absl::Seconds(10)).ok());
  const absl::Status failed = runner.Run({"/bin/false"}, absl::Seconds(10));
  EXPECT_EQ(failed.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(Message(failed), HasSubstr("/bin/false: exited with code 1"));
  EXPECT_EQ(runner.Run({"/bin/sleep", "30"}, absl::Milliseconds(100)).code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(runner.Run({"/nonexistent/systemctl"}, absl::Seconds(10)).code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace gpuop::agent::runtime
