#ifndef GPUOP_AGENT_RUNTIME_FAKE_RESTARTER_H_
#define GPUOP_AGENT_RUNTIME_FAKE_RESTARTER_H_

// Test doubles for the restart interfaces: they record every call and return a set result.

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/runtime/restart.h"

namespace gpuop::agent::runtime {

// Records the runtimes it was asked to restart. Fails with `failure` while it is not OK.
class RecordingRestarter final : public Restarter {
 public:
  absl::StatusOr<std::string> Restart(Runtime runtime) override {
    calls.push_back(runtime);
    if (!failure.ok()) return failure;
    return absl::StrCat("restarted ", RuntimeName(runtime), " (test)");
  }

  std::vector<Runtime> calls;
  absl::Status failure;
};

// Records the commands it was asked to run; each exits with `result`.
class RecordingRunner final : public CommandRunner {
 public:
  absl::Status Run(const std::vector<std::string>& argv, absl::Duration /*timeout*/) override {
    commands.push_back(argv);
    return result;
  }

  std::vector<std::vector<std::string>> commands;
  absl::Status result;
};

// Records signals instead of sending them.
class RecordingSignaller final : public Signaller {
 public:
  absl::Status Signal(pid_t pid, int signal) override {
    signals.emplace_back(pid, signal);
    return absl::OkStatus();
  }

  std::vector<std::pair<pid_t, int>> signals;
};

}  // namespace gpuop::agent::runtime

#endif  // GPUOP_AGENT_RUNTIME_FAKE_RESTARTER_H_
