#include "test/fakes/driver/holders.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "test/fakes/driver/nodes.h"

namespace gpuop::fakedriver {
namespace {

std::vector<std::string> ListDir(const std::string& path) {
  std::vector<std::string> names;
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return names;
  while (const dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

std::string ReadLink(const std::string& path) {
  std::string target(4096, '\0');
  const ssize_t length = readlink(path.c_str(), target.data(), target.size());
  if (length < 0) return "";
  target.resize(static_cast<size_t>(length));
  return target;
}

std::string BaseName(absl::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == absl::string_view::npos ? path : path.substr(slash + 1));
}

// The device root as /proc names files: without trailing slashes, symbolic links resolved.
std::string CanonicalDevRoot(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path == "/dev") return path;
  if (char* resolved = realpath(path.c_str(), nullptr)) {
    path = resolved;
    std::free(resolved);
  }
  return path;
}

bool HoldsNode(const std::string& fd_path, const HolderQuery& query, const std::string& dev_root,
               std::string* name) {
  struct stat info {};
  if (stat(fd_path.c_str(), &info) != 0) return false;
  const bool listed = std::any_of(
      query.open_files.begin(), query.open_files.end(),
      [&](const FileId& file) { return file.device == info.st_dev && file.inode == info.st_ino; });
  if (!listed && (!S_ISCHR(info.st_mode) || info.st_rdev != makedev(kNodeMajor, kNodeMinor))) {
    return false;
  }
  const std::string target = ReadLink(fd_path);
  if (!listed) {
    const std::string base = BaseName(target);
    if (!absl::StartsWith(base, "nvidia")) return false;
    if (!query.node_names.empty() && std::find(query.node_names.begin(), query.node_names.end(),
                                               base) == query.node_names.end()) {
      return false;
    }
    if (dev_root != "/dev" && !absl::StartsWith(target, dev_root + "/")) return false;
  }
  *name = target;
  return true;
}

// The mapped files of one maps line: "<range> <perms> <offset> <maj:min> <inode> <path>".
bool ParseMapsLine(absl::string_view line, dev_t* device, ino_t* inode, std::string* path) {
  std::vector<absl::string_view> fields =
      absl::StrSplit(line, absl::MaxSplits(' ', 5), absl::SkipEmpty());
  if (fields.size() < 6) return false;
  const std::vector<absl::string_view> numbers = absl::StrSplit(fields[3], ':');
  uint32_t major_number = 0;
  uint32_t minor_number = 0;
  uint64_t inode_number = 0;
  if (numbers.size() != 2 || !absl::SimpleHexAtoi(numbers[0], &major_number) ||
      !absl::SimpleHexAtoi(numbers[1], &minor_number) ||
      !absl::SimpleAtoi(fields[4], &inode_number) || inode_number == 0) {
    return false;
  }
  *device = makedev(major_number, minor_number);
  *inode = static_cast<ino_t>(inode_number);
  absl::string_view name = absl::StripLeadingAsciiWhitespace(fields[5]);
  absl::ConsumeSuffix(&name, " (deleted)");
  *path = std::string(name);
  return true;
}

// This process's pid in the PID namespace of the proc file system at `proc`.
pid_t SelfIn(const std::string& proc) {
  char target[32] = {};
  const ssize_t n = readlink(absl::StrCat(proc, "/self").c_str(), target, sizeof(target) - 1);
  int pid = 0;
  if (n > 0 && absl::SimpleAtoi(absl::string_view(target, static_cast<size_t>(n)), &pid) &&
      pid > 0) {
    return pid;
  }
  return getpid();
}

}  // namespace

bool IdentifyFile(const std::string& path, FileId* out) {
  struct stat info {};
  if (stat(path.c_str(), &info) != 0) return false;
  *out = FileId{info.st_dev, info.st_ino, BaseName(path)};
  return true;
}

std::vector<Holder> FindHolders(const HolderQuery& query) {
  const pid_t self = query.self != 0 ? query.self : SelfIn(query.proc);
  const std::string dev_root = CanonicalDevRoot(query.dev_root);
  std::vector<std::pair<pid_t, std::string>> pids;
  for (const std::string& name : ListDir(query.proc)) {
    int pid = 0;
    if (absl::SimpleAtoi(name, &pid) && pid > 0 && pid != self) pids.emplace_back(pid, name);
  }
  std::sort(pids.begin(), pids.end());
  std::vector<Holder> holders;
  for (const auto& [pid, name] : pids) {
    const std::string dir = absl::StrCat(query.proc, "/", name);
    Holder holder;
    holder.pid = pid;
    for (const std::string& fd : ListDir(dir + "/fd")) {
      std::string node;
      if (HoldsNode(absl::StrCat(dir, "/fd/", fd), query, dev_root, &node) &&
          std::find(holder.what.begin(), holder.what.end(), node) == holder.what.end()) {
        holder.what.push_back(node);
      }
    }
    if (!query.libraries.empty()) {
      std::ifstream maps(dir + "/maps");
      std::string line;
      while (std::getline(maps, line)) {
        dev_t device = 0;
        ino_t inode = 0;
        std::string path;
        if (!ParseMapsLine(line, &device, &inode, &path)) continue;
        for (const FileId& library : query.libraries) {
          if (library.inode != inode ||
              (library.device != device && BaseName(path) != library.name)) {
            continue;
          }
          const std::string mapped = absl::StrCat(path, " (mapped)");
          if (std::find(holder.what.begin(), holder.what.end(), mapped) == holder.what.end()) {
            holder.what.push_back(mapped);
          }
        }
      }
    }
    if (holder.what.empty()) continue;
    std::ifstream comm(dir + "/comm");
    std::getline(comm, holder.command);
    holders.push_back(std::move(holder));
  }
  return holders;
}

std::string DescribeHolders(const std::vector<Holder>& holders) {
  std::string out;
  for (const Holder& holder : holders) {
    absl::StrAppend(&out, "  pid ", holder.pid, " (", holder.command,
                    "): ", absl::StrJoin(holder.what, ", "), "\n");
  }
  return out;
}

}  // namespace gpuop::fakedriver
