#ifndef GPUOP_TEST_FAKES_NVML_CONTROL_H_
#define GPUOP_TEST_FAKES_NVML_CONTROL_H_

// The control file (GPUOP_FAKE_NVML_CONTROL): a test or a demo appends lines, the library applies
// each complete line once. Grammar (one command per line, '#' starts a comment):
//   xid <gpu> <code> [<gpu-instance> <compute-instance>]
//   ecc-sbe <gpu> | ecc-dbe <gpu> | lost <gpu> | recover <gpu>
//   set <gpu> <field> <value>
//   process <gpu> <pid> <used-mib> [<gpu-instance> <compute-instance>]   starts or updates
//   process-exit <gpu> <pid>
//   fail <gpu> <call|*> <error>   the call (every call: *) answers NO_PERMISSION, UNKNOWN, ...
//   unfail <gpu>                  every injected error of the GPU is gone
//   reset <gpu>                   a GPU reset (Machine::ResetGpu), unless simulated processes run
//   advance <duration>            moves the scenario clock forward
// <gpu> is an index or "all".

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "test/fakes/nvml/scenario.h"

namespace gpuop::fakenvml {

struct ControlCommand {
  std::optional<Action> action;  // set unless this is an advance
  int64_t advance_ms = 0;
};

// Parses one line; nullopt for a blank or comment line.
absl::StatusOr<std::optional<ControlCommand>> ParseControlLine(absl::string_view line);

class ControlFile {
 public:
  explicit ControlFile(std::string path) : path_(std::move(path)) {}

  const std::string& path() const { return path_; }

  // The complete lines appended since the last call, with their 1-based line numbers. Costs one
  // stat() when nothing changed. A file that does not exist yet reads as empty; a file that is
  // replaced (new inode) or truncated is read again from its start.
  std::vector<std::pair<int, std::string>> ReadNewLines();

 private:
  std::string path_;
  dev_t device_ = 0;
  ino_t inode_ = 0;
  off_t offset_ = 0;
  int line_ = 0;
};

}  // namespace gpuop::fakenvml

#endif  // GPUOP_TEST_FAKES_NVML_CONTROL_H_
