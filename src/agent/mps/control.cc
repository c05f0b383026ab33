#include "agent/mps/control.h"

#include <atomic>
#include <cstdint>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/mps/root.h"
#include "common/files.h"
#include "common/process.h"
#include "common/status_macros.h"

namespace gpuop::agent::mps {

constexpr char kControlProgram[] = "nvidia-cuda-mps-control";

ProcessControlProgram::ProcessControlProgram(std::filesystem::path binary,
                                             std::filesystem::path scratch_dir,
                                             absl::Duration timeout, std::vector<std::string> env)
    : binary_(std::move(binary)),
      scratch_dir_(std::move(scratch_dir)),
      timeout_(timeout),
      env_(std::move(env)) {}

absl::StatusOr<std::string> ProcessControlProgram::Run(const ControlDirs& dirs,
                                                       const std::vector<std::string>& args,
                                                       const std::string& input) {
  std::error_code ec;
  std::filesystem::create_directories(scratch_dir_, ec);
  // Runs may overlap (a health check and a client): each has files of its own.
  static std::atomic<uint64_t> runs{0};
  const std::string stem = absl::StrCat("control-", getpid(), "-", runs.fetch_add(1));
  const std::filesystem::path in = scratch_dir_ / (stem + ".in");
  const std::filesystem::path out = scratch_dir_ / (stem + ".out");
  GPUOP_RETURN_IF_ERROR(common::WriteFileAtomically(in, input));
  std::filesystem::remove(out, ec);
  std::vector<std::string> argv = {binary_.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string what = absl::StrJoin(argv, " ");
  std::vector<std::string> env = env_;
  env.push_back(absl::StrCat(kPipeDirEnv, "=", dirs.pipe_dir.string()));
  env.push_back(absl::StrCat(kLogDirEnv, "=", dirs.log_dir.string()));
  absl::StatusOr<common::Subprocess> child =
      common::Subprocess::Spawn({.argv = argv, .env = env, .output_path = out, .input_path = in});
  if (!child.ok()) return child.status();
  absl::StatusOr<int> waited = child->Wait(timeout_);
  if (!waited.ok()) {
    (void)child->Stop(absl::Seconds(1));
    return absl::DeadlineExceededError(
        absl::StrCat(what, ": no answer in ", absl::FormatDuration(timeout_)));
  }
  absl::StatusOr<std::string> output = common::ReadFile(out);
  std::filesystem::remove(in, ec);
  std::filesystem::remove(out, ec);
  const std::string printed = output.ok() ? *output : "";
  if (!WIFEXITED(*waited) || WEXITSTATUS(*waited) != 0) {
    return absl::UnavailableError(absl::StrCat(what, " (", input, "): ", child->DescribeExit(),
                                               printed.empty() ? "" : ": ", printed));
  }
  return printed;
}

absl::Status ProcessControlProgram::StartDaemon(const ControlDirs& dirs) {
  return Run(dirs, {"-d"}, "").status();
}

absl::StatusOr<std::string> ProcessControlProgram::Send(const ControlDirs& dirs,
                                                        const std::string& command) {
  return Run(dirs, {}, command);
}

absl::StatusOr<std::filesystem::path> FindControlProgram(
    const std::filesystem::path& driver_root, const std::vector<std::string>& binary_dirs) {
  std::vector<std::string> looked;
  for (const std::string& dir : binary_dirs) {
    const std::filesystem::path candidate = driver_root / dir / kControlProgram;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    looked.push_back(candidate.string());
  }
  return absl::NotFoundError(
      absl::StrCat(kControlProgram, " is not in the driver root: ", absl::StrJoin(looked, ", ")));
}

}  // namespace gpuop::agent::mps
