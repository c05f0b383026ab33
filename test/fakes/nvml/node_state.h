#ifndef GPUOP_TEST_FAKES_NVML_NODE_STATE_H_
#define GPUOP_TEST_FAKES_NVML_NODE_STATE_H_

// SIMULATED. The node's MIG state: what the real kernel driver keeps for every GPU and shares
// between all its clients, across NVML sessions (MIG mode, current and pending, and the GPU and
// compute instances). The fake keeps it in a file (README.md, "Node MIG state") that every process
// playing the same node reads and writes:
//
//   gpuop-fake-nvml-state 1
//   gpu GPU-<uuid> mode enabled pending enabled
//   gi GPU-<uuid> id 7 profile 19 start 0
//   ci GPU-<uuid> gi 7 id 0 slices 1 start 0
//
// One `gpu` line per GPU that has an entry (a GPU without one plays its scenario's layout), its
// GPU instances (`profile`: the id create calls take; `start`: the placement on the memory-slot
// axis) and their compute instances (`slices`, `start` inside the GPU instance). '#' starts a
// comment. Writers replace the file atomically (a temporary file beside it, fsync, rename) while
// holding an exclusive flock on <file>.lock, and read it again inside that lock, so two processes
// never lose each other's change; readers notice a change with one stat (device, inode, size,
// mtime: every write gives the file a later mtime than any version before it).

#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpuop::fakenvml {

struct ComputeInstanceRecord {
  unsigned int id = 0;
  unsigned int slices = 0;
  unsigned int start = 0;
  bool operator==(const ComputeInstanceRecord&) const = default;
};

struct GpuInstanceRecord {
  unsigned int id = 0;
  unsigned int profile_id = 0;
  unsigned int start = 0;
  std::vector<ComputeInstanceRecord> computes;  // sorted by id
  bool operator==(const GpuInstanceRecord&) const = default;
};

struct GpuMigRecord {
  bool current = false;  // MIG mode in effect
  bool pending = false;  // MIG mode after the next reset; equal to current when none is pending
  std::vector<GpuInstanceRecord> instances;  // sorted by id
  bool operator==(const GpuMigRecord&) const = default;
};

// By GPU UUID ("GPU-...").
using NodeMigState = std::map<std::string, GpuMigRecord>;

std::string FormatNodeState(const NodeMigState& state);
// InvalidArgument naming the line and the problem ("line 3: expected ..."). An empty text (an
// emptied file) has no entries.
absl::StatusOr<NodeMigState> ParseNodeState(absl::string_view text);

// The state file of one process. Not thread-safe: the Driver's mutex guards it.
class NodeStateFile {
 public:
  explicit NodeStateFile(std::string path) : path_(std::move(path)) {}

  const std::string& path() const { return path_; }

  // The state, when the file changed since this object last read or wrote it (one stat
  // otherwise, and then nullopt). A file that does not exist reads as an empty state. Errors name
  // the file; a file that cannot be parsed is not read again until it changes.
  std::optional<absl::StatusOr<NodeMigState>> ReadIfChanged();

  // An exclusive flock on <path>.lock, released when the object goes away.
  class Lock {
   public:
    explicit Lock(int fd) : fd_(fd) {}
    Lock(Lock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
    Lock& operator=(Lock&&) = delete;
    Lock(const Lock&) = delete;
    ~Lock();

   private:
    int fd_;
  };
  // Blocks until the lock is held. Errors (the lock file cannot be created or opened) name it.
  absl::StatusOr<Lock> LockExclusive();

  // Reads the file whatever its stat says (under the lock, before a change).
  absl::StatusOr<NodeMigState> Read();

  // Replaces the file with `state` atomically. Errors name the file and the errno text.
  absl::Status Write(const NodeMigState& state);

 private:
  struct Identity {
    bool exists = false;
    dev_t device = 0;
    ino_t inode = 0;
    off_t size = 0;
    timespec mtime{};
    bool operator==(const Identity& other) const;
  };

  std::string path_;
  std::optional<Identity> seen_;  // the version last read or written
};

}  // namespace gpuop::fakenvml

#endif  // GPUOP_TEST_FAKES_NVML_NODE_STATE_H_
