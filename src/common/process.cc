#include "common/process.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

extern char** environ;

namespace gpuop::common {
namespace {

// Builds the child's environment: the parent's, with `overrides` replacing same-named entries.
std::vector<std::string> MergeEnvironment(const std::vector<std::string>& overrides) {
  std::vector<std::string> merged;
  auto name_of = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    bool replaced = false;
    for (const auto& o : overrides) replaced = replaced || name_of(o) == name_of(entry);
    if (!replaced) merged.push_back(std::move(entry));
  }
  merged.insert(merged.end(), overrides.begin(), overrides.end());
  return merged;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Runs in the child between fork and exec: only async-signal-safe calls. Reports a failure's
// errno through `report_fd` and exits.
[[noreturn]] void ExecChild(const SpawnOptions& options, pid_t parent, char* const* argv,
                            char* const* envp, int output_fd, int input_fd, int report_fd) {
  auto fail = [report_fd](int err) {
    (void)!write(report_fd, &err, sizeof(err));
    _exit(127);
  };
  if (options.new_process_group && setpgid(0, 0) != 0) fail(errno);
  if (options.kill_with_parent) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail(errno);
    // The parent may have died before prctl took effect.
    if (getppid() != parent) _exit(1);
  }
  // Undo signal state a test runner may have set, so the program starts with defaults.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (output_fd >= 0) {
    if (dup2(output_fd, STDOUT_FILENO) < 0 || dup2(output_fd, STDERR_FILENO) < 0) fail(errno);
  }
  if (input_fd >= 0) {
    if (dup2(input_fd, STDIN_FILENO) < 0) fail(errno);
  } else {
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
  }
  if (!options.root.empty()) {
    if (chroot(options.root.c_str()) != 0) fail(errno);
    if (options.working_dir.empty() && chdir("/") != 0) fail(errno);
  }
  if (!options.working_dir.empty() && chdir(options.working_dir.c_str()) != 0) fail(errno);
  execve(argv[0], argv, envp);
  fail(errno);
  _exit(127);  // Not reached.
}

}  // namespace

std::string DescribeWaitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return absl::StrCat("exited with code ", WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    return absl::StrCat("killed by signal ", WTERMSIG(wait_status), " (",
                        strsignal(WTERMSIG(wait_status)), ")");
  }
  return absl::StrCat("ended with wait status ", wait_status);
}

absl::StatusOr<Subprocess> Subprocess::Spawn(const SpawnOptions& options) {
  if (options.argv.empty() || options.argv[0].empty()) {
    return absl::InvalidArgumentError("spawn: argv must name a program");
  }
  const std::string& program = options.argv[0];
  std::vector<std::string> argv_strings = options.argv;
  std::vector<std::string> env_strings = MergeEnvironment(options.env);
  std::vector<char*> argv = CStrings(argv_strings);
  std::vector<char*> envp = CStrings(env_strings);

  int output_fd = -1;
  if (!options.output_path.empty()) {
    output_fd = open(options.output_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (output_fd < 0) {
      return absl::ErrnoToStatus(errno, absl::StrCat("spawn ", program, ": open output file ",
                                                     options.output_path.string()));
    }
  }
  int input_fd = -1;
  if (!options.input_path.empty()) {
    input_fd = open(options.input_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (input_fd < 0) {
      const int err = errno;
      if (output_fd >= 0) close(output_fd);
      return absl::ErrnoToStatus(
          err, absl::StrCat("spawn ", program, ": open input file ", options.input_path.string()));
    }
  }
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    const int err = errno;
    if (output_fd >= 0) close(output_fd);
    if (input_fd >= 0) close(input_fd);
    return absl::ErrnoToStatus(err, absl::StrCat("spawn ", program, ": pipe"));
  }

  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    ExecChild(options, parent, argv.data(), envp.data(), output_fd, input_fd, report[1]);
  }
  const int fork_errno = errno;
  close(report[1]);
  if (output_fd >= 0) close(output_fd);
  if (input_fd >= 0) close(input_fd);
  if (pid < 0) {
    close(report[0]);
    return absl::ErrnoToStatus(fork_errno, absl::StrCat("spawn ", program, ": fork"));
  }
  // The report pipe closes on a successful exec; a written errno means exec (or setup) failed.
  int child_errno = 0;
  ssize_t n;
  do {
    n = read(report[0], &child_errno, sizeof(child_errno));
  } while (n < 0 && errno == EINTR);
  close(report[0]);
  if (n == static_cast<ssize_t>(sizeof(child_errno))) {
    int status;
    waitpid(pid, &status, 0);
    return absl::ErrnoToStatus(child_errno, absl::StrCat("spawn ", program));
  }
  std::string name = std::filesystem::path(program).filename().string();
  return Subprocess(pid, std::move(name), options.new_process_group);
}

Subprocess::Subprocess(Subprocess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      name_(std::move(other.name_)),
      group_(other.group_),
      wait_status_(other.wait_status_) {}

Subprocess& Subprocess::operator=(Subprocess&& other) noexcept {
  if (this != &other) {
    this->~Subprocess();
    pid_ = std::exchange(other.pid_, -1);
    name_ = std::move(other.name_);
    group_ = other.group_;
    wait_status_ = other.wait_status_;
  }
  return *this;
}

Subprocess::~Subprocess() {
  if (pid_ > 0 && !wait_status_.has_value()) {
    Signal(SIGKILL);
    Reap(/*block=*/true);
  }
}

void Subprocess::Signal(int sig) const {
  if (pid_ <= 0 || wait_status_.has_value()) return;
  // Signal the whole group so helpers the child started go too; fall back to the pid alone.
  if (!group_ || kill(-pid_, sig) != 0) kill(pid_, sig);
}

bool Subprocess::Reap(bool block) {
  if (wait_status_.has_value()) return true;
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &status, block ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) {
    wait_status_ = status;
    // Members of the group that outlived their leader would be orphaned: finish them.
    if (group_) kill(-pid_, SIGKILL);
    return true;
  }
  return false;
}

bool Subprocess::Running() { return pid_ > 0 && !Reap(/*block=*/false); }

absl::StatusOr<int> Subprocess::Wait(absl::Duration timeout) {
  if (pid_ <= 0) return absl::FailedPreconditionError("wait: no process");
  const absl::Time deadline = absl::Now() + timeout;
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
  while (!Reap(/*block=*/false)) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      if (pidfd >= 0) close(pidfd);
      return absl::DeadlineExceededError(absl::StrCat(
          name_, " (pid ", pid_, ") still running after ", absl::FormatDuration(timeout)));
    }
    const int wait_ms =
        static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 50));
    if (pidfd >= 0) {
      pollfd pfd{.fd = pidfd, .events = POLLIN, .revents = 0};
      poll(&pfd, 1, wait_ms);
    } else {
      usleep(static_cast<useconds_t>(std::min(wait_ms, 10)) * 1000);
    }
  }
  if (pidfd >= 0) close(pidfd);
  return *wait_status_;
}

absl::Status Subprocess::Stop(absl::Duration grace) {
  if (pid_ <= 0 || !Running()) return absl::OkStatus();
  Signal(SIGTERM);
  if (Wait(grace).ok()) return absl::OkStatus();
  Signal(SIGKILL);
  if (Wait(absl::Seconds(10)).ok()) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("stop ", name_, " (pid ", pid_, "): survived SIGKILL"));
}

std::string Subprocess::DescribeExit() const {
  return wait_status_.has_value() ? DescribeWaitStatus(*wait_status_) : "running";
}

absl::StatusOr<CapturedRun> RunCaptured(SpawnOptions options, absl::Duration timeout) {
  static std::atomic<int> counter{0};
  options.output_path = std::filesystem::temp_directory_path() /
                        absl::StrCat("gpuop-run-", getpid(), "-", counter.fetch_add(1));
  const std::filesystem::path output = options.output_path;
  absl::StatusOr<Subprocess> child = Subprocess::Spawn(options);
  if (!child.ok()) return child.status();
  absl::StatusOr<int> waited = child->Wait(timeout);
  if (!waited.ok()) (void)child->Stop(absl::Seconds(5));
  std::ifstream in(output);
  std::stringstream printed;
  printed << in.rdbuf();
  std::error_code ignored;
  std::filesystem::remove(output, ignored);
  if (!waited.ok()) {
    return absl::DeadlineExceededError(absl::StrCat(options.argv.front(), ": still running after ",
                                                    absl::FormatDuration(timeout)));
  }
  return CapturedRun{.exited_zero = *waited == 0,
                     .ended = child->DescribeExit(),
                     .output = std::string(absl::StripAsciiWhitespace(printed.str()))};
}

}  // namespace gpuop::common
