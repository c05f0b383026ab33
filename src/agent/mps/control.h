#ifndef GPUOP_AGENT_MPS_CONTROL_H_
#define GPUOP_AGENT_MPS_CONTROL_H_

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gpuop::agent::mps {

// The directories a control daemon and its clients meet in (CUDA_MPS_PIPE_DIRECTORY,
// CUDA_MPS_LOG_DIRECTORY).
struct ControlDirs {
  std::filesystem::path pipe_dir;
  std::filesystem::path log_dir;
};

// NVIDIA's control program, nvidia-cuda-mps-control: with -d it starts a control daemon in the
// background; without it, it sends the commands on its standard input to the daemon that owns
// the pipe directory and prints the answers. The boundary the MPS component runs processes
// through; tests substitute a recording fake.
class ControlProgram {
 public:
  virtual ~ControlProgram() = default;
  // `nvidia-cuda-mps-control -d` with `dirs` in the environment; OK once it exited 0 (the
  // daemon then runs on its own).
  [[nodiscard]] virtual absl::Status StartDaemon(const ControlDirs& dirs) = 0;
  // `nvidia-cuda-mps-control` with `command` on its standard input; what it printed, when it
  // exited 0.
  [[nodiscard]] virtual absl::StatusOr<std::string> Send(const ControlDirs& dirs,
                                                         const std::string& command) = 0;
};

// ControlProgram over common::Subprocess: runs `binary` with its standard input and output in
// files under `scratch_dir`, each run stopped after `timeout`, with `env` ("NAME=value") added
// to the environment: the daemon starts nvidia-cuda-mps-server, which needs the driver's
// binaries on PATH and its libraries on LD_LIBRARY_PATH when the driver is not the
// container's own.
class ProcessControlProgram final : public ControlProgram {
 public:
  ProcessControlProgram(std::filesystem::path binary, std::filesystem::path scratch_dir,
                        absl::Duration timeout = absl::Seconds(30),
                        std::vector<std::string> env = {});
  absl::Status StartDaemon(const ControlDirs& dirs) override;
  absl::StatusOr<std::string> Send(const ControlDirs& dirs, const std::string& command) override;

 private:
  // Runs the program with `args` and `input`; its output when it exited 0.
  absl::StatusOr<std::string> Run(const ControlDirs& dirs, const std::vector<std::string>& args,
                                  const std::string& input);

  const std::filesystem::path binary_;
  const std::filesystem::path scratch_dir_;
  const absl::Duration timeout_;
  const std::vector<std::string> env_;
};

// Where nvidia-cuda-mps-control is under `driver_root` as this process sees it: the first of
// `binary_dirs` (relative to it) that has it; NotFound naming the places looked at.
[[nodiscard]] absl::StatusOr<std::filesystem::path> FindControlProgram(
    const std::filesystem::path& driver_root, const std::vector<std::string>& binary_dirs);

}  // namespace gpuop::agent::mps

#endif  // GPUOP_AGENT_MPS_CONTROL_H_
