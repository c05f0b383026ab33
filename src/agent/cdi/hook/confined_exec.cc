#include "agent/cdi/hook/confined_exec.h"

#include <cerrno>
#include <cstring>
#include <ctime>

#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace gpuop::agent::cdi::hook {
namespace {

// What the child reports through the pipe when a step fails before exec: the step and errno.
struct ChildError {
  int step;
  int error_number;
};

constexpr const char* kSteps[] = {
    "unshare the mount namespace",
    "make mounts private",
    "bind the root onto itself",
    "enter the root",
    "confine to the root",
    "drop capabilities",
    "set no_new_privs",
    "open /dev/null",
    "execute",
};

[[noreturn]] void Fail(int pipe_fd, int step) {
  const ChildError error{step, errno};
  (void)!write(pipe_fd, &error, sizeof(error));
  _exit(127);
}

// Runs in the forked child; never returns.
[[noreturn]] void Child(const std::string& root, char* const* argv, int pipe_fd, int null_fd) {
  // The mount namespace first: everything after changes only this child's view.
  if (unshare(CLONE_NEWNS) != 0) Fail(pipe_fd, 0);
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) Fail(pipe_fd, 1);
  // pivot_root needs the new root to be a mount point; a recursive bind keeps the CDI mounts.
  if (mount(root.c_str(), root.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) Fail(pipe_fd, 2);
  if (chdir(root.c_str()) != 0) Fail(pipe_fd, 3);
  if (syscall(SYS_pivot_root, ".", ".") == 0) {
    // The old root is stacked on ".": detach it, and with it every host path.
    if (umount2(".", MNT_DETACH) != 0) Fail(pipe_fd, 4);
  } else if (chroot(".") != 0) {
    Fail(pipe_fd, 4);
  }
  if (chdir("/") != 0) Fail(pipe_fd, 4);

  // No capabilities: no mount, no chroot, no escape from the root set up above.
  for (int cap = 0; cap <= 63; ++cap) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) Fail(pipe_fd, 5);
  }
  (void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_header_struct header{.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capset, &header, data) != 0) Fail(pipe_fd, 5);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) Fail(pipe_fd, 6);

  if (dup2(null_fd, STDIN_FILENO) < 0) Fail(pipe_fd, 7);
  if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0) Fail(pipe_fd, 7);
  // Every other descriptor is close-on-exec (the pipe, /dev/null) or closed here.
  for (int fd = 3; fd < 1024; ++fd) {
    if (fd != pipe_fd) close(fd);
  }
  char path[] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  char* const env[] = {path, nullptr};
  execve(argv[0], argv, env);
  Fail(pipe_fd, 8);
}

}  // namespace

StatusOr<int> RunConfined(const std::string& root, const std::vector<std::string>& argv,
                          int timeout_seconds) {
  if (argv.empty() || argv[0].empty() || argv[0].front() != '/') {
    return Status::Error("confined exec: the program must be an absolute path inside the root");
  }
  std::vector<std::string> args = argv;
  std::vector<char*> raw;
  for (std::string& arg : args) raw.push_back(arg.data());
  raw.push_back(nullptr);

  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) return Status::Error(std::string("open /dev/null: ") + std::strerror(errno));
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    close(null_fd);
    return Status::Error(std::string("pipe: ") + std::strerror(errno));
  }
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    close(null_fd);
    close(fds[0]);
    close(fds[1]);
    return Status::Error(std::string("fork: ") + std::strerror(err), err);
  }
  if (pid == 0) {
    close(fds[0]);
    Child(root, raw.data(), fds[1], null_fd);
  }
  close(fds[1]);
  close(null_fd);

  ChildError error{};
  ssize_t got;
  do {
    got = read(fds[0], &error, sizeof(error));  // returns 0 at exec (close-on-exec) or exit
  } while (got < 0 && errno == EINTR);
  close(fds[0]);

  int status = 0;
  const time_t deadline = time(nullptr) + timeout_seconds;
  while (true) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      return Status::Error(std::string("wait for ") + argv[0] + ": " + std::strerror(errno));
    }
    if (time(nullptr) >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return Status::Error(argv[0] + " in " + root + " did not finish within " +
                           std::to_string(timeout_seconds) + " s; killed");
    }
    const timespec pause{.tv_sec = 0, .tv_nsec = 10'000'000};
    nanosleep(&pause, nullptr);
  }
  if (got == static_cast<ssize_t>(sizeof(error))) {
    const int step = error.step >= 0 && error.step < 9 ? error.step : 8;
    return Status::Error("run " + argv[0] + " confined to " + root + ": " + kSteps[step] + ": " +
                             std::strerror(error.error_number),
                         error.error_number);
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return Status::Error(argv[0] + " ended in an unknown way");
}

}  // namespace gpuop::agent::cdi::hook
