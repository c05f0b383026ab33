#ifndef GPUOP_TEST_FAKES_DRIVER_HOLDERS_H_
#define GPUOP_TEST_FAKES_DRIVER_HOLDERS_H_

// SIMULATED stand-in for the kernel's module reference counts: which processes on the node hold
// the simulated driver, found by scanning /proc the way lsof would. The real driver container
// cannot unload the kernel modules while a process has a device node open or has the user-space
// driver mapped; the simulated one refuses to tear down for the same reasons.
//
// A process holds the driver when
//   - one of its open files (/proc/<pid>/fd/*) is a character device 1:7 (the number the
//     simulated device nodes have; see nodes.h) whose name starts with "nvidia" and, unless the
//     device root is /dev, lies under the device root. /proc shows each file by its path in the
//     holder's own mount namespace (for a container, its own /dev/nvidia0), hence the test of the
//     name rather than of the path when the device root is /dev; or
//   - it maps (/proc/<pid>/maps) one of `libraries`: same inode, and the same device or the same
//     file name (a bind mount of an overlayfs file can show the layer's device on some kernels).
// The scanning process itself never counts.
//
// The fake NVML (../nvml) asks the same question about one GPU: whether a process other than the
// caller holds that GPU's node (`node_names`, `open_files`), which keeps a MIG mode change
// pending and refuses a GPU reset, as the real driver does. This is a static library of its
// own (gpuop_fake_holders) that both link; it needs nothing but glibc and absl.

#include <string>
#include <vector>

#include <sys/types.h>

namespace gpuop::fakedriver {

struct FileId {
  dev_t device = 0;
  ino_t inode = 0;
  std::string name;  // the file name, e.g. libnvidia-ml.so.570.86.15
};

struct HolderQuery {
  std::string proc = "/proc";
  // Excluded. 0: the scanning process as `proc` numbers it (its "self" link), which differs
  // from getpid() when `proc` belongs to another PID namespace (a driver root whose /proc is
  // the host's, scanned from a container); getpid() when that link cannot be read.
  pid_t self = 0;
  std::string dev_root = "/dev";
  std::vector<FileId> libraries;
  // When set, a simulated node counts only with one of these file names ("nvidia3").
  std::vector<std::string> node_names;
  // Files that count when open, whatever their kind (same device and inode): outside /dev, a
  // regular file may stand in for a device node (the fake NVML's tests use such files).
  std::vector<FileId> open_files;
};

struct Holder {
  pid_t pid = 0;
  std::string command;            // /proc/<pid>/comm
  std::vector<std::string> what;  // what it holds: "/dev/nvidia0", "<path> (mapped)"
};

// Every holder, by pid. Processes that exit or cannot be read during the scan are skipped.
std::vector<Holder> FindHolders(const HolderQuery& query);

// The identity of the file at `path`; false when it does not exist.
bool IdentifyFile(const std::string& path, FileId* out);

// "  pid 42 (python3): /dev/nvidia0, /dev/nvidiactl" lines, one per holder.
std::string DescribeHolders(const std::vector<Holder>& holders);

}  // namespace gpuop::fakedriver

#endif  // GPUOP_TEST_FAKES_DRIVER_HOLDERS_H_
