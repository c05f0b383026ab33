#include "agent/runtime/configurator.h"

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <optional>
#include <system_error>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/runtime/containerd.h"
#include "agent/runtime/crio.h"
#include "agent/runtime/docker.h"
#include "common/status_macros.h"
#include "hw/nvml/driver_library.h"

namespace gpuop::agent::runtime {
namespace {

namespace fs = std::filesystem;

constexpr fs::perms kDefaultMode =
    fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read;

fs::path WithSuffix(const fs::path& path, const char* suffix) {
  return fs::path(absl::StrCat(path.string(), suffix));
}

fs::path PendingRestartPath(Runtime runtime) {
  return fs::path(kStateDir) / absl::StrCat(RuntimeName(runtime), ".restart-pending");
}

// Prefixes the runtime, and what was already done when an operation fails part way.
absl::Status Annotate(const absl::Status& status, Runtime runtime, const ChangeReport& report) {
  std::string message = absl::StrCat(RuntimeName(runtime), ": ");
  if (report.Changed()) {
    absl::StrAppend(&message, absl::StrJoin(report.actions, ", "), "; then failed: ");
  }
  absl::StrAppend(&message, status.message());
  return absl::Status(status.code(), message);
}

// Holds an exclusive flock on `path` for its lifetime.
class HostLock {
 public:
  static absl::StatusOr<HostLock> Acquire(const HostFiles& files) {
    const fs::path shown = fs::path(kStateDir) / "lock";
    const fs::path path = files.Resolve(shown);
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    if (ec) return absl::InternalError(absl::StrCat("create ", kStateDir, ": ", ec.message()));
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open ", shown.string()));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      close(fd);
      if (err == EWOULDBLOCK) {
        return absl::AbortedError(absl::StrCat("another gpuop runtime operation holds ",
                                               shown.string(), "; retry when it is done"));
      }
      return absl::ErrnoToStatus(err, absl::StrCat("lock ", shown.string()));
    }
    return HostLock(fd);
  }
  HostLock(HostLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  HostLock& operator=(HostLock&&) = delete;
  ~HostLock() {
    if (fd_ >= 0) close(fd_);
  }

 private:
  explicit HostLock(int fd) : fd_(fd) {}
  int fd_;
};

std::vector<std::string> Unique(const std::vector<std::string>& notes) {
  std::vector<std::string> out;
  for (const std::string& note : notes) {
    if (std::find(out.begin(), out.end(), note) == out.end()) out.push_back(note);
  }
  return out;
}

// One file's change, computed before anything is written.
struct Change {
  const ManagedFile* file;
  std::optional<std::string> current;
  std::string desired;
};

// Whether `host_path` is an executable regular file on the host behind `files`, links followed
// inside its root.
bool IsExecutableOnHost(const HostFiles& files, const std::string& host_path) {
  const std::string found = hw::ResolveInRoot(files.root().string(), host_path);
  struct stat st;
  return !found.empty() && stat(found.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         (st.st_mode & 0111) != 0;
}

Options NvidiaForHost(const HostFiles& files, const Options& options,
                      std::vector<std::string>& notes) {
  if (!options.add_nvidia_runtime) return options;
  std::vector<std::string> candidates;
  if (!options.runtime_binary.empty()) {
    candidates = {options.runtime_binary};
  } else {
    candidates.assign(std::begin(kNvidiaRuntimeBinaries), std::end(kNvidiaRuntimeBinaries));
  }
  for (const std::string& candidate : candidates) {
    if (!IsExecutableOnHost(files, candidate)) continue;
    Options out = options;
    out.runtime_binary = candidate;
    return out;
  }
  notes.push_back(absl::StrCat(
      "no ", options.runtime_name, " runtime handler: ", absl::StrJoin(candidates, ", "),
      candidates.size() == 1 ? " is" : " are",
      " not on the host (install the NVIDIA Container "
      "Toolkit for one; gpuop's own components and CDI need none)",
      options.set_as_default ? "; the default runtime is left as it is" : ""));
  Options out = options;
  out.add_nvidia_runtime = false;
  out.set_as_default = false;
  return out;
}

}  // namespace

Options ForHost(const HostFiles& files, const Options& options, std::vector<std::string>& notes) {
  Options out = NvidiaForHost(files, options, notes);
  if (out.add_gpuop_runtime && !IsExecutableOnHost(files, out.gpuop_runtime_binary)) {
    notes.push_back(absl::StrCat("no ", out.gpuop_runtime_name,
                                 " runtime handler: ", out.gpuop_runtime_binary,
                                 " is not on the host (`gpuop-agent runtime configure "
                                 "--gpuop-runtime` installs it from gpuop's image)"));
    out.add_gpuop_runtime = false;
  }
  return out;
}

Plan Configurator::PlanFor(Runtime runtime, const Options& options,
                           std::vector<std::string>* notes) const {
  switch (runtime) {
    case Runtime::kContainerd:
      return ContainerdPlan(files_, options, notes);
    case Runtime::kCrio:
      return CrioPlan(files_, options, notes);
    case Runtime::kDocker:
      return DockerPlan(files_, options, notes);
  }
  return {};
}

absl::StatusOr<ChangeReport> Configurator::Configure(Runtime runtime, const Options& requested) {
  GPUOP_RETURN_IF_ERROR(ValidateOptions(requested));
  ChangeReport report{.runtime = runtime};
  std::vector<std::string> notes;
  const Options options = ForHost(files_, requested, notes);
  if (!options.enable_cdi && !options.add_nvidia_runtime && !options.add_gpuop_runtime) {
    report.notes = Unique(notes);
    return report;
  }
  GPUOP_ASSIGN_OR_RETURN(const HostLock lock, HostLock::Acquire(files_));
  const Plan plan = PlanFor(runtime, options, &notes);

  std::vector<Change> changes;
  for (const ManagedFile& file : plan) {
    absl::StatusOr<std::optional<std::string>> current = files_.Read(file.path);
    if (!current.ok()) return Annotate(current.status(), runtime, report);
    absl::StatusOr<std::string> desired = file.desired(*current);
    if (!desired.ok()) return Annotate(desired.status(), runtime, report);
    if (*current != *desired) changes.push_back({&file, *std::move(current), *std::move(desired)});
  }

  for (const Change& change : changes) {
    const ManagedFile& file = *change.file;
    fs::perms mode = kDefaultMode;
    if (change.current.has_value() || file.mode_from.has_value()) {
      absl::StatusOr<std::optional<fs::perms>> perms =
          files_.Permissions(change.current.has_value() ? file.path : *file.mode_from);
      if (!perms.ok()) return Annotate(perms.status(), runtime, report);
      mode = perms->value_or(kDefaultMode);
    }
    if (file.kind == ManagedFile::Kind::kEdited) {
      const fs::path backup = WithSuffix(file.path, kBackupSuffix);
      const fs::path created = WithSuffix(file.path, kCreatedSuffix);
      absl::Status saved;
      if (change.current.has_value() && !files_.Exists(backup)) {
        saved = files_.Write(backup, *change.current, mode);
      } else if (!change.current.has_value() && !files_.Exists(backup) && !files_.Exists(created)) {
        saved = files_.Write(created,
                             absl::StrCat("gpuop-agent created ", file.path.string(),
                                          "; `gpuop-agent runtime unconfigure` removes it.\n"),
                             kDefaultMode);
      }
      if (!saved.ok()) return Annotate(saved, runtime, report);
    }
    if (absl::Status written = files_.Write(file.path, change.desired, mode); !written.ok()) {
      return Annotate(written, runtime, report);
    }
    const bool created = !change.current.has_value() && file.kind == ManagedFile::Kind::kEdited;
    report.actions.push_back(
        absl::StrCat(created ? "created" : file.verb, " ", file.path.string()));
  }
  report.notes = Unique(notes);
  GPUOP_RETURN_IF_ERROR(FinishWithRestart(runtime, report));
  return report;
}

absl::StatusOr<ChangeReport> Configurator::Unconfigure(Runtime runtime, const Options& requested,
                                                       bool force) {
  GPUOP_RETURN_IF_ERROR(ValidateOptions(requested));
  ChangeReport report{.runtime = runtime};
  GPUOP_ASSIGN_OR_RETURN(const HostLock lock, HostLock::Acquire(files_));
  // The options as configure applied them, which tell whether an edited file is unchanged since.
  std::vector<std::string> notes;
  const Options options = ForHost(files_, requested, notes);
  const Plan plan = PlanFor(runtime, options, nullptr);
  // gpuop's handler binary may be gone already (removed by hand, or by an earlier unconfigure of
  // another runtime): an edited file that holds gpuop's handler is then still only what gpuop
  // wrote.
  std::optional<Plan> with_gpuop;
  if (requested.add_gpuop_runtime && !options.add_gpuop_runtime) {
    Options kept = options;
    kept.add_gpuop_runtime = true;
    with_gpuop = PlanFor(runtime, kept, nullptr);
  }

  // Computed for every file before any is touched, so that a refusal leaves all of them alone.
  struct Step {
    enum class Do { kKeep, kRestore, kRemove } what = Do::kKeep;
    fs::path path;
    std::string original;             // kRestore: the bytes to put back
    std::optional<fs::path> cleanup;  // gpuop's backup or marker, removed afterwards
    std::string action;               // for the report; empty for cleanup alone
  };
  std::vector<Step> steps;
  for (auto it = plan.rbegin(); it != plan.rend(); ++it) {
    const ManagedFile& file = *it;
    absl::StatusOr<std::optional<std::string>> current = files_.Read(file.path);
    if (!current.ok()) return Annotate(current.status(), runtime, report);
    if (file.kind == ManagedFile::Kind::kDropIn) {
      if (current->has_value()) {
        steps.push_back({.what = Step::Do::kRemove,
                         .path = file.path,
                         .action = absl::StrCat("removed ", file.path.string())});
      }
      continue;
    }
    const fs::path backup_path = WithSuffix(file.path, kBackupSuffix);
    const fs::path created_path = WithSuffix(file.path, kCreatedSuffix);
    absl::StatusOr<std::optional<std::string>> backup = files_.Read(backup_path);
    if (!backup.ok()) return Annotate(backup.status(), runtime, report);
    std::optional<std::string> original;  // nullopt: the file did not exist
    fs::path marker;
    if (backup->has_value()) {
      original = **backup;
      marker = backup_path;
    } else if (files_.Exists(created_path)) {
      marker = created_path;
    } else {
      continue;  // gpuop never changed this file
    }
    if (*current == original) {
      steps.push_back({.path = file.path, .cleanup = marker});
      continue;
    }
    auto wrote = [&](const ManagedFile& plan_file) {
      const absl::StatusOr<std::string> ours = plan_file.desired(original);
      return ours.ok() && current->has_value() && **current == *ours;
    };
    const bool unchanged_since =
        wrote(file) ||
        (with_gpuop.has_value() && wrote((*with_gpuop)[std::distance(it, plan.rend()) - 1]));
    if (!unchanged_since && !force) {
      return absl::FailedPreconditionError(absl::StrCat(
          RuntimeName(runtime), ": ", file.path.string(),
          " was changed after gpuop configured it; putting back ", marker.string(),
          " would discard that change. Nothing was done: restore it by hand, or unconfigure "
          "with force"));
    }
    if (original.has_value()) {
      steps.push_back({.what = Step::Do::kRestore,
                       .path = file.path,
                       .original = *std::move(original),
                       .cleanup = marker,
                       .action = absl::StrCat("restored ", file.path.string(), " from ",
                                              backup_path.string())});
    } else {
      steps.push_back({.what = Step::Do::kRemove,
                       .path = file.path,
                       .cleanup = marker,
                       .action = absl::StrCat("removed ", file.path.string())});
    }
  }

  for (const Step& step : steps) {
    absl::Status status;
    if (step.what == Step::Do::kRestore) {
      // The backup has the original's permission bits.
      absl::StatusOr<std::optional<fs::perms>> mode = files_.Permissions(*step.cleanup);
      status = mode.ok() ? files_.Write(step.path, step.original, mode->value_or(kDefaultMode))
                         : mode.status();
    } else if (step.what == Step::Do::kRemove) {
      status = files_.Remove(step.path);
    }
    if (status.ok() && step.cleanup.has_value()) status = files_.Remove(*step.cleanup);
    if (!status.ok()) return Annotate(status, runtime, report);
    if (!step.action.empty()) report.actions.push_back(step.action);
  }
  GPUOP_RETURN_IF_ERROR(FinishWithRestart(runtime, report));
  return report;
}

absl::StatusOr<StatusReport> Configurator::Status(Runtime runtime, const Options& requested) const {
  GPUOP_RETURN_IF_ERROR(ValidateOptions(requested));
  StatusReport report{.runtime = runtime};
  const ChangeReport none{.runtime = runtime};
  std::vector<std::string> notes;
  const Options options = ForHost(files_, requested, notes);
  for (const ManagedFile& file : PlanFor(runtime, options, &notes)) {
    absl::StatusOr<std::optional<std::string>> current = files_.Read(file.path);
    if (!current.ok()) return Annotate(current.status(), runtime, none);
    absl::StatusOr<std::string> desired = file.desired(*current);
    if (!desired.ok()) return Annotate(desired.status(), runtime, none);
    FileStatus status{.path = file.path};
    if (*current == *desired) {
      status.state = FileState::kConfigured;
    } else if (file.kind == ManagedFile::Kind::kDropIn) {
      status.state = current->has_value() ? FileState::kDrifted : FileState::kNotConfigured;
      status.detail = current->has_value()
                          ? "differs from what gpuop would write now: the files it derives from, "
                            "the options or the drop-in itself changed"
                          : "absent";
    } else if (files_.Exists(WithSuffix(file.path, kBackupSuffix)) ||
               files_.Exists(WithSuffix(file.path, kCreatedSuffix))) {
      status.state = FileState::kDrifted;
      status.detail = "gpuop configured it, but it no longer holds gpuop's settings";
    } else {
      status.state = FileState::kNotConfigured;
      status.detail = current->has_value() ? "lacks gpuop's settings" : "absent";
    }
    report.files.push_back(std::move(status));
  }
  report.restart_pending = files_.Exists(PendingRestartPath(runtime));
  report.notes = Unique(notes);
  return report;
}

absl::Status Configurator::FinishWithRestart(Runtime runtime, ChangeReport& report) {
  const fs::path pending = PendingRestartPath(runtime);
  const bool was_pending = files_.Exists(pending);
  if (!report.Changed() && !was_pending) return absl::OkStatus();
  // Recorded before restarting, so a crash or failure in between leaves the restart to the next
  // operation instead of losing it.
  absl::Status recorded = absl::OkStatus();
  if (!was_pending) {
    recorded = files_.Write(pending, absl::StrCat(RuntimeName(runtime), "\n"), kDefaultMode);
  }
  absl::StatusOr<std::string> restarted = restarter_.Restart(runtime);
  if (!restarted.ok()) {
    std::string retry = recorded.ok()
                            ? "the next configure or unconfigure retries it"
                            : absl::StrCat("restart it by hand (", recorded.message(), ")");
    return Annotate(
        absl::Status(restarted.status().code(),
                     absl::StrCat("restart failed: ", restarted.status().message(), "; ", retry)),
        runtime, report);
  }
  report.restart = *std::move(restarted);
  if (!report.Changed()) absl::StrAppend(&report.restart, " (pending from an earlier run)");
  // A marker that cannot be removed costs one extra restart next time; the change itself is done.
  if (absl::Status removed = files_.Remove(pending); !removed.ok()) {
    absl::StrAppend(&report.restart, "; could not clear ", pending.string(), ": ",
                    removed.message());
  }
  return absl::OkStatus();
}

}  // namespace gpuop::agent::runtime
