#include "test/fakes/driver/nodes.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace gpuop::fakedriver {
namespace {

constexpr const char* kCapsDir = "nvidia-caps";

std::string Errno() { return std::strerror(errno); }

// 1 when `path` is a simulated node, 0 when it does not exist, -1 when it is something else.
int Simulated(const std::string& path) {
  struct stat info {};
  if (lstat(path.c_str(), &info) != 0) return 0;
  return S_ISCHR(info.st_mode) && info.st_rdev == makedev(kNodeMajor, kNodeMinor) ? 1 : -1;
}

}  // namespace

std::vector<NodeSpec> DriverNodes(const std::vector<unsigned int>& minors) {
  std::vector<NodeSpec> nodes;
  for (const unsigned int minor : minors) nodes.push_back({absl::StrCat("nvidia", minor), 0666});
  for (const char* name : {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"}) {
    nodes.push_back({name, 0666});
  }
  nodes.push_back({absl::StrCat(kCapsDir, "/nvidia-cap1"), 0400});
  nodes.push_back({absl::StrCat(kCapsDir, "/nvidia-cap2"), 0444});
  return nodes;
}

absl::Status CreateNodes(const std::string& dev_root, const std::vector<NodeSpec>& nodes) {
  const std::string caps = absl::StrCat(dev_root, "/", kCapsDir);
  if (mkdir(caps.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::UnavailableError(absl::StrCat("mkdir ", caps, ": ", Errno()));
  }
  for (const NodeSpec& node : nodes) {
    const std::string path = absl::StrCat(dev_root, "/", node.name);
    if (Simulated(path) < 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("mknod ", path, ": it exists and is not a simulated node (character device ",
                       kNodeMajor, ":", kNodeMinor, "); not replacing it"));
    }
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      return absl::UnavailableError(absl::StrCat("replace ", path, ": ", Errno()));
    }
    if (mknod(path.c_str(), S_IFCHR | node.mode, makedev(kNodeMajor, kNodeMinor)) != 0) {
      return absl::UnavailableError(
          absl::StrCat("mknod ", path, " c ", kNodeMajor, " ", kNodeMinor, ": ", Errno()));
    }
    if (chmod(path.c_str(), node.mode) != 0) {  // mknod applies the umask
      return absl::UnavailableError(absl::StrCat("chmod ", path, ": ", Errno()));
    }
  }
  return absl::OkStatus();
}

absl::Status RemoveNodes(const std::string& dev_root, const std::vector<NodeSpec>& nodes) {
  for (const NodeSpec& node : nodes) {
    const std::string path = absl::StrCat(dev_root, "/", node.name);
    if (Simulated(path) <= 0) continue;  // never remove what the simulated driver did not make
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      return absl::UnavailableError(absl::StrCat("remove ", path, ": ", Errno()));
    }
  }
  const std::string caps = absl::StrCat(dev_root, "/", kCapsDir);
  if (rmdir(caps.c_str()) != 0 && errno != ENOENT && errno != ENOTEMPTY && errno != EEXIST) {
    return absl::UnavailableError(absl::StrCat("remove ", caps, ": ", Errno()));
  }
  return absl::OkStatus();
}

std::vector<NodeSpec> WithExistingGpuNodes(const std::string& dev_root,
                                           std::vector<NodeSpec> nodes) {
  DIR* dir = opendir(dev_root.c_str());
  if (dir == nullptr) return nodes;
  while (const dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    absl::string_view digits = name;
    if (!absl::ConsumePrefix(&digits, "nvidia") || digits.empty() ||
        !std::all_of(digits.begin(), digits.end(), absl::ascii_isdigit)) {
      continue;
    }
    struct stat info {};
    if (lstat(absl::StrCat(dev_root, "/", name).c_str(), &info) != 0 || !S_ISCHR(info.st_mode) ||
        info.st_rdev != makedev(kNodeMajor, kNodeMinor)) {
      continue;
    }
    const bool listed = std::any_of(nodes.begin(), nodes.end(),
                                    [&](const NodeSpec& node) { return node.name == name; });
    if (!listed) nodes.push_back({name, 0666});
  }
  closedir(dir);
  return nodes;
}

bool AnyNodeExists(const std::string& dev_root, const std::vector<NodeSpec>& nodes) {
  for (const NodeSpec& node : nodes) {
    if (Simulated(absl::StrCat(dev_root, "/", node.name)) > 0) return true;
  }
  return false;
}

}  // namespace gpuop::fakedriver
