#ifndef GPUOP_COMMON_PROCESS_H_
#define GPUOP_COMMON_PROCESS_H_

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gpuop::common {

struct SpawnOptions {
  // argv[0] is the program's path; it is executed as given (no PATH search).
  std::vector<std::string> argv;
  // "NAME=value" entries added to (or replacing in) the inherited environment.
  std::vector<std::string> env;
  // stdout and stderr are appended to this file when set; otherwise they are inherited.
  std::filesystem::path output_path;
  // The child reads its stdin from this file when set; otherwise from /dev/null.
  std::filesystem::path input_path;
  // The child's working directory; the caller's when empty.
  std::filesystem::path working_dir;
  // The child chroots here (needs CAP_SYS_CHROOT) before it changes to `working_dir` (or "/")
  // and executes argv[0], which is then a path inside the new root. Empty: no chroot.
  std::filesystem::path root;
  // The child leads a process group of its own, so a terminal's Ctrl-C reaches only the parent,
  // which can then stop its children in the order it chooses.
  bool new_process_group = true;
  // The kernel sends SIGKILL to the child when the thread that spawned it exits, so a child never
  // outlives a parent that crashed or was killed. The spawning thread must therefore live at
  // least as long as the child is wanted.
  bool kill_with_parent = true;
};

// A child process started with fork/exec. Not thread-safe; one owner drives it.
//
// The destructor kills a still-running child with SIGKILL and reaps it, so a Subprocess never
// leaks a process or a zombie.
class Subprocess {
 public:
  // Starts a child. Fails with InvalidArgument for an empty argv and with the errno of exec (for
  // example NotFound for a missing program) when the program cannot be executed.
  [[nodiscard]] static absl::StatusOr<Subprocess> Spawn(const SpawnOptions& options);

  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&& other) noexcept;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess();

  pid_t pid() const { return pid_; }
  const std::string& name() const { return name_; }

  // True while the child has not exited. Reaps the child once it has.
  bool Running();

  // Waits up to `timeout` for the child to exit. Returns its raw wait status, or
  // DeadlineExceeded when it is still running.
  [[nodiscard]] absl::StatusOr<int> Wait(absl::Duration timeout);

  // Sends SIGTERM (to the process group when the child leads one), waits up to `grace`, then
  // sends SIGKILL and reaps. Returns OK once the child is gone; a no-op for an exited child.
  [[nodiscard]] absl::Status Stop(absl::Duration grace);

  // How the child ended ("exited with code 1", "killed by signal 9"), or "running".
  std::string DescribeExit() const;

 private:
  Subprocess(pid_t pid, std::string name, bool group)
      : pid_(pid), name_(std::move(name)), group_(group) {}

  void Signal(int sig) const;
  bool Reap(bool block);

  pid_t pid_ = -1;
  std::string name_;
  bool group_ = false;
  std::optional<int> wait_status_;
};

// Describes a raw wait status in words.
std::string DescribeWaitStatus(int wait_status);

// What a program printed and how it ended (RunCaptured).
struct CapturedRun {
  bool exited_zero = false;
  std::string ended;   // "exited with code 255", "killed by signal 9"
  std::string output;  // stdout and stderr together, surrounding whitespace trimmed
};

// Runs `options.argv` to the end with its output captured in a temporary file (any
// output_path in `options` is replaced). The spawn's error when it cannot start;
// DeadlineExceeded, after stopping it, when it runs past `timeout`.
[[nodiscard]] absl::StatusOr<CapturedRun> RunCaptured(SpawnOptions options, absl::Duration timeout);

}  // namespace gpuop::common

#endif  // GPUOP_COMMON_PROCESS_H_
