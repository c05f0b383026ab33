#ifndef GPUOP_TEST_NODE_NODE_E2E_UTIL_H_
#define GPUOP_TEST_NODE_NODE_E2E_UTIL_H_

// Pieces of the node tier's tests: tools run to completion (helm) and what the real node wrote
// (container logs, files).

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace gpuop::test {

struct ToolResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs argv (argv[0] a path) to completion with `env` added, within `timeout`.
[[nodiscard]] absl::StatusOr<ToolResult> RunTool(std::vector<std::string> argv,
                                                 std::vector<std::string> env,
                                                 absl::Duration timeout);

// What a container wrote to stdout and stderr, from the kubelet's log files under
// `pod_logs_dir` (<namespace>_<pod>_<uid>/<container>/<restart>.log, CRI format), without the
// CRI prefixes; partial lines are joined. NotFound while the container has written nothing.
[[nodiscard]] absl::StatusOr<std::string> ContainerLog(const std::filesystem::path& pod_logs_dir,
                                                       absl::string_view ns, absl::string_view pod,
                                                       absl::string_view container);

// Every regular file under `dir` (relative path → contents); an absent dir is empty.
std::map<std::string, std::string> SnapshotTree(const std::filesystem::path& dir);

// The difference between two snapshots in words ("" when equal).
std::string DescribeTreeDifference(const std::map<std::string, std::string>& before,
                                   const std::map<std::string, std::string>& after);

}  // namespace gpuop::test

#endif  // GPUOP_TEST_NODE_NODE_E2E_UTIL_H_
