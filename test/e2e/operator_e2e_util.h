#ifndef GPUOP_TEST_E2E_OPERATOR_E2E_UTIL_H_
#define GPUOP_TEST_E2E_OPERATOR_E2E_UTIL_H_

// Small pieces the operator's end-to-end test is written with: gpuop binaries as child
// processes, reading labels and conditions off objects, and the revision a DaemonSet's pods
// should be at.

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/process.h"
#include "kube/client/client.h"

namespace gpuop::test {

// A gpuop binary (operator, agent) run by a test: a process group of its own whose output goes
// to `log`, stopped by the interrupt guard if the test is interrupted and killed when it is
// destroyed. Not thread-safe.
class ChildProcess {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ChildProcess>> Start(
      std::vector<std::string> argv, std::vector<std::string> env, std::filesystem::path log);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // SIGKILL: the process gets no chance to clean up (release a Lease, finish a write).
  [[nodiscard]] absl::Status Kill();
  // SIGTERM, then SIGKILL after `grace`. A no-op once it has exited.
  [[nodiscard]] absl::Status Stop(absl::Duration grace = absl::Seconds(10));
  bool Running() { return process_.Running(); }
  // "running", "exited with code 0", "killed by signal 9".
  std::string DescribeExit() const { return process_.DescribeExit(); }
  const std::filesystem::path& log() const { return log_; }
  // The last `max_bytes` of the log, for failure messages.
  std::string LogTail(size_t max_bytes = 4000) const;

 private:
  ChildProcess(common::Subprocess process, std::filesystem::path log)
      : process_(std::move(process)), log_(std::move(log)) {}

  common::Subprocess process_;
  std::filesystem::path log_;
};

// The admin's API client for the test control plane, without client-side rate limiting.
[[nodiscard]] absl::StatusOr<std::unique_ptr<kube::Client>> AdminClient();

// Calls `pending` every 200 ms until it returns "" (done). On timeout, fails naming `what` and
// what `pending` last said was still missing, which makes a failed wait explain itself.
[[nodiscard]] absl::Status AwaitDone(absl::string_view what, absl::Duration timeout,
                                     const std::function<absl::StatusOr<std::string>()>& pending);

// metadata.labels[key] / metadata.annotations[key], or "" when absent.
std::string LabelOf(const kube::Json& object, const std::string& key);
std::string AnnotationOf(const kube::Json& object, const std::string& key);
bool HasLabel(const kube::Json& object, const std::string& key);
bool HasAnnotation(const kube::Json& object, const std::string& key);
// Condition `type` in status.conditions, or an empty object.
kube::Json ConditionOf(const kube::Json& object, const std::string& type);
// The status of condition `type` in status.conditions ("True", "False", ...), or "".
std::string ConditionStatus(const kube::Json& object, const std::string& type);
// The lastHeartbeatTime of condition `type` in seconds since the epoch (a Node's conditions carry
// one); 0 when absent or unparseable.
int64_t ConditionHeartbeat(const kube::Json& object, const std::string& type);
// A pod that is Running and Ready and not being deleted.
bool PodRunningAndReady(const kube::Json& pod);
// spec.unschedulable.
bool Cordoned(const kube::Json& node);
// Whether the Node carries a taint with `key`.
bool HasTaint(const kube::Json& node, const std::string& key);

// The controller-revision-hash of DaemonSet `name`'s current revision: the highest-numbered
// ControllerRevision the DaemonSet controller keeps for it.
[[nodiscard]] absl::StatusOr<std::string> CurrentRevisionHash(kube::Client& client,
                                                              const std::string& ns,
                                                              const std::string& name);

// Appends `line` and a newline to `path`.
[[nodiscard]] absl::Status AppendLine(const std::filesystem::path& path, absl::string_view line);

}  // namespace gpuop::test

#endif  // GPUOP_TEST_E2E_OPERATOR_E2E_UTIL_H_
