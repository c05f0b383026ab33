#include "test/fakes/nvml/node_state.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace gpuop::fakenvml {
namespace {

constexpr absl::string_view kHeader = "gpuop-fake-nvml-state 1";
constexpr off_t kMaxSize = 16 << 20;

const char* Mode(bool enabled) { return enabled ? "enabled" : "disabled"; }

std::string Errno() { return std::strerror(errno); }

// Reads `words[at]` == `key` and the number after it.
bool KeyedNumber(const std::vector<absl::string_view>& words, size_t at, absl::string_view key,
                 unsigned int* value) {
  return at + 1 < words.size() && words[at] == key && absl::SimpleAtoi(words[at + 1], value);
}

bool KeyedMode(const std::vector<absl::string_view>& words, size_t at, absl::string_view key,
               bool* enabled) {
  if (at + 1 >= words.size() || words[at] != key) return false;
  if (words[at + 1] != "enabled" && words[at + 1] != "disabled") return false;
  *enabled = words[at + 1] == "enabled";
  return true;
}

absl::Status LineError(int line, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("line ", line, ": ", what));
}

}  // namespace

std::string FormatNodeState(const NodeMigState& state) {
  std::string out = absl::StrCat(
      "# SIMULATED: the MIG state of this node's GPUs, as gpuop's fake NVML keeps it "
      "(test/fakes/nvml/README.md)\n",
      kHeader, "\n");
  for (const auto& [uuid, gpu] : state) {
    absl::StrAppend(&out, "gpu ", uuid, " mode ", Mode(gpu.current), " pending ", Mode(gpu.pending),
                    "\n");
    for (const GpuInstanceRecord& gi : gpu.instances) {
      absl::StrAppend(&out, "gi ", uuid, " id ", gi.id, " profile ", gi.profile_id, " start ",
                      gi.start, "\n");
      for (const ComputeInstanceRecord& ci : gi.computes) {
        absl::StrAppend(&out, "ci ", uuid, " gi ", gi.id, " id ", ci.id, " slices ", ci.slices,
                        " start ", ci.start, "\n");
      }
    }
  }
  return out;
}

absl::StatusOr<NodeMigState> ParseNodeState(absl::string_view text) {
  NodeMigState state;
  bool header = false;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    line = line.substr(0, line.find('#'));
    const std::vector<absl::string_view> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (words.empty()) continue;
    if (!header) {
      if (words.size() != 2 || words[0] != "gpuop-fake-nvml-state") {
        return LineError(number, absl::StrCat("expected \"", kHeader, "\""));
      }
      if (words[1] != "1") {
        return LineError(number, absl::StrCat("unknown version ", words[1],
                                              " (this library "
                                              "reads version 1)"));
      }
      header = true;
      continue;
    }
    const absl::string_view kind = words[0];
    if (kind == "gpu") {
      GpuMigRecord gpu;
      if (words.size() != 6 || !absl::StartsWith(words[1], "GPU-") ||
          !KeyedMode(words, 2, "mode", &gpu.current) ||
          !KeyedMode(words, 4, "pending", &gpu.pending)) {
        return LineError(number,
                         "expected gpu GPU-<uuid> mode enabled|disabled pending enabled|disabled");
      }
      if (!state.emplace(std::string(words[1]), gpu).second) {
        return LineError(number, absl::StrCat("a second entry for ", words[1]));
      }
    } else if (kind == "gi") {
      GpuInstanceRecord gi;
      if (words.size() != 8 || !KeyedNumber(words, 2, "id", &gi.id) ||
          !KeyedNumber(words, 4, "profile", &gi.profile_id) ||
          !KeyedNumber(words, 6, "start", &gi.start)) {
        return LineError(number, "expected gi GPU-<uuid> id <id> profile <profile-id> start <n>");
      }
      const auto gpu = state.find(std::string(words[1]));
      if (gpu == state.end()) {
        return LineError(number, absl::StrCat("no gpu line before it for ", words[1]));
      }
      auto& instances = gpu->second.instances;
      if (std::any_of(instances.begin(), instances.end(),
                      [&](const GpuInstanceRecord& other) { return other.id == gi.id; })) {
        return LineError(number, absl::StrCat("a second GPU instance ", gi.id, " on ", words[1]));
      }
      instances.insert(std::upper_bound(instances.begin(), instances.end(), gi,
                                        [](const GpuInstanceRecord& a, const GpuInstanceRecord& b) {
                                          return a.id < b.id;
                                        }),
                       gi);
    } else if (kind == "ci") {
      unsigned int gi_id = 0;
      ComputeInstanceRecord ci;
      if (words.size() != 10 || !KeyedNumber(words, 2, "gi", &gi_id) ||
          !KeyedNumber(words, 4, "id", &ci.id) || !KeyedNumber(words, 6, "slices", &ci.slices) ||
          !KeyedNumber(words, 8, "start", &ci.start)) {
        return LineError(number,
                         "expected ci GPU-<uuid> gi <gpu-instance> id <id> slices <n> start <n>");
      }
      const auto gpu = state.find(std::string(words[1]));
      if (gpu == state.end()) {
        return LineError(number, absl::StrCat("no gpu line before it for ", words[1]));
      }
      auto& instances = gpu->second.instances;
      const auto gi = std::find_if(instances.begin(), instances.end(),
                                   [&](const GpuInstanceRecord& g) { return g.id == gi_id; });
      if (gi == instances.end()) {
        return LineError(number, absl::StrCat("no GPU instance ", gi_id, " on ", words[1]));
      }
      auto& computes = gi->computes;
      if (std::any_of(computes.begin(), computes.end(),
                      [&](const ComputeInstanceRecord& other) { return other.id == ci.id; })) {
        return LineError(number, absl::StrCat("a second compute instance ", ci.id,
                                              " in GPU instance ", gi_id, " on ", words[1]));
      }
      computes.insert(std::upper_bound(computes.begin(), computes.end(), ci,
                                       [](const ComputeInstanceRecord& a,
                                          const ComputeInstanceRecord& b) { return a.id < b.id; }),
                      ci);
    } else {
      return LineError(number, absl::StrCat("unknown entry \"", kind, "\" (gpu, gi, ci)"));
    }
  }
  return state;  // an empty file (no header either) has no entries
}

bool NodeStateFile::Identity::operator==(const Identity& other) const {
  if (exists != other.exists) return false;
  if (!exists) return true;
  return device == other.device && inode == other.inode && size == other.size &&
         mtime.tv_sec == other.mtime.tv_sec && mtime.tv_nsec == other.mtime.tv_nsec;
}

std::optional<absl::StatusOr<NodeMigState>> NodeStateFile::ReadIfChanged() {
  Identity now;
  struct stat info {};
  if (stat(path_.c_str(), &info) == 0) {
    now = {true, info.st_dev, info.st_ino, info.st_size, info.st_mtim};
  } else if (errno != ENOENT) {
    return absl::StatusOr<NodeMigState>(absl::UnavailableError(absl::StrCat(path_, ": ", Errno())));
  }
  if (seen_.has_value() && *seen_ == now) return std::nullopt;
  if (!now.exists) {
    seen_ = now;
    return NodeMigState();
  }
  return Read();
}

NodeStateFile::Lock::~Lock() {
  if (fd_ >= 0) close(fd_);  // closing the last descriptor releases the flock
}

absl::StatusOr<NodeStateFile::Lock> NodeStateFile::LockExclusive() {
  const std::string path = path_ + ".lock";
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  // flock needs no write access: a process that may not write the lock file may still take it.
  if (fd < 0 && errno == EACCES) fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::UnavailableError(absl::StrCat(path, ": ", Errno()));
  while (flock(fd, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    const std::string why = Errno();
    close(fd);
    return absl::UnavailableError(absl::StrCat("flock ", path, ": ", why));
  }
  return Lock(fd);
}

absl::StatusOr<NodeMigState> NodeStateFile::Read() {
  const int fd = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) return absl::UnavailableError(absl::StrCat(path_, ": ", Errno()));
    seen_ = Identity{};
    return NodeMigState();
  }
  struct stat info {};
  if (fstat(fd, &info) != 0) {
    const std::string why = Errno();
    close(fd);
    return absl::UnavailableError(absl::StrCat(path_, ": ", why));
  }
  // Writers replace the file rather than change it, so what this descriptor reads is the version
  // its fstat describes.
  seen_ = Identity{true, info.st_dev, info.st_ino, info.st_size, info.st_mtim};
  if (info.st_size > kMaxSize) {
    close(fd);
    return absl::DataLossError(absl::StrCat(path_, ": larger than 16 MiB"));
  }
  std::string text(static_cast<size_t>(info.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  text.resize(got);
  absl::StatusOr<NodeMigState> state = ParseNodeState(text);
  if (!state.ok()) {
    return absl::DataLossError(absl::StrCat(path_, ": ", state.status().message()));
  }
  return state;
}

absl::Status NodeStateFile::Write(const NodeMigState& state) {
  const std::string text = FormatNodeState(state);
  const std::string temporary = absl::StrCat(path_, ".tmp-", getpid());
  const int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("create ", temporary, ": ", Errno()));
  auto fail = [&](absl::string_view step) {
    const std::string why = Errno();
    close(fd);
    unlink(temporary.c_str());
    return absl::UnavailableError(absl::StrCat(step, " ", temporary, ": ", why));
  };
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("write");
    written += static_cast<size_t>(n);
  }
  fchmod(fd, 0644);  // whatever the umask: every process on the node reads it
  // A later mtime than the version it replaces, even within one tick of the file system's clock,
  // so that a reader comparing stat results never takes the new version for the old one (the
  // inode number of the old file may be reused at once).
  timespec mtime{};
  clock_gettime(CLOCK_REALTIME, &mtime);
  if (seen_.has_value() && seen_->exists &&
      (mtime.tv_sec < seen_->mtime.tv_sec ||
       (mtime.tv_sec == seen_->mtime.tv_sec && mtime.tv_nsec <= seen_->mtime.tv_nsec))) {
    mtime = seen_->mtime;
    if (++mtime.tv_nsec >= 1000000000) {
      mtime.tv_nsec = 0;
      ++mtime.tv_sec;
    }
  }
  const timespec times[2] = {{0, UTIME_OMIT}, mtime};
  if (futimens(fd, times) != 0) return fail("futimens");
  if (fsync(fd) != 0) return fail("fsync");
  struct stat info {};
  if (fstat(fd, &info) != 0) return fail("fstat");
  close(fd);
  if (rename(temporary.c_str(), path_.c_str()) != 0) {
    const std::string why = Errno();
    unlink(temporary.c_str());
    return absl::UnavailableError(absl::StrCat("rename ", temporary, " to ", path_, ": ", why));
  }
  seen_ = Identity{true, info.st_dev, info.st_ino, info.st_size, info.st_mtim};
  return absl::OkStatus();
}

}  // namespace gpuop::fakenvml
