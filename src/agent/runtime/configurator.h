#ifndef GPUOP_AGENT_RUNTIME_CONFIGURATOR_H_
#define GPUOP_AGENT_RUNTIME_CONFIGURATOR_H_

// Configures a node's container runtime for GPUs (CDI, an NVIDIA runtime handler, gpuop's own
// runtime handler) and takes the configuration back out: what `gpuop-agent runtime
// configure|unconfigure|status` run.
//
// Files, per runtime (the runtime handlers are entries in them):
//   containerd  /etc/containerd/conf.d/99-gpuop.toml (gpuop's), and one imports entry added to
//               /etc/containerd/config.toml (the node's; every other byte kept)
//   CRI-O       /etc/crio/crio.conf.d/99-gpuop.toml (gpuop's)
//   Docker      /etc/docker/daemon.json (the node's, edited as JSON)
// The program gpuop's handler runs is installed and removed apart (gpuop_runtime.h).
//
// Guarantees:
//  - Nothing is written until every file's new content has been computed and checked; a
//    malformed file (invalid TOML or JSON, a wrong type at a key gpuop reads, a containerd 1.x
//    configuration) fails the operation with FailedPrecondition naming the file, line and
//    problem, and no file is touched.
//  - Every write is atomic (common::WriteFileAtomically) and keeps the file's permission bits.
//  - Idempotent: a configure that finds everything as wanted writes nothing and restarts nothing.
//  - Before its first change to a node's file, gpuop saves the original bytes in
//    `<file>.gpuop-backup` (same permissions), or, when the file did not exist, writes
//    `<file>.gpuop-created`. A backup is never overwritten. Unconfigure puts the original back
//    byte for byte (or removes the file gpuop created), removes gpuop's own files, and then the
//    backup or marker.
//  - The runtime is restarted, through the Restarter, only when a file changed, once per
//    operation. When the restart fails, a marker in /var/lib/gpuop/runtime remembers it and the
//    next configure or unconfigure retries it even if no file changes.
//  - One operation at a time per host: an flock on /var/lib/gpuop/runtime/lock; a concurrent
//    configure or unconfigure fails with Aborted (retry).
//
// Not thread-safe; one owner drives it.

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/runtime/host_files.h"
#include "agent/runtime/plan.h"
#include "agent/runtime/restart.h"
#include "agent/runtime/runtime.h"

namespace gpuop::agent::runtime {

inline constexpr char kBackupSuffix[] = ".gpuop-backup";
inline constexpr char kCreatedSuffix[] = ".gpuop-created";
inline constexpr char kStateDir[] = "/var/lib/gpuop/runtime";

// `options` as they can be applied on the host behind `files`: an nvidia runtime handler only
// when its binary is there (options.runtime_binary, or the first of kNvidiaRuntimeBinaries),
// with runtime_binary set to it; without one, add_nvidia_runtime and set_as_default are cleared.
// gpuop's handler only when options.gpuop_runtime_binary is there; without it,
// add_gpuop_runtime is cleared. So no runtime is ever pointed at a binary nothing installed.
// What was decided is appended to `notes`. A binary must be an executable regular file, links
// followed inside the root.
Options ForHost(const HostFiles& files, const Options& options, std::vector<std::string>& notes);

class Configurator {
 public:
  // `host_root` is where the host's root is mounted ("/" on the host). `restarter` must outlive
  // this object.
  Configurator(std::filesystem::path host_root, Restarter& restarter)
      : files_(std::move(host_root)), restarter_(restarter) {}

  // Brings `runtime`'s configuration to what `options` asks for (ForHost: each handler only
  // where its binary is; an nvidia handler the node has is kept, a gpuop one that differs is
  // made gpuop's) and restarts the runtime when anything changed; nothing at all when nothing is
  // left to apply. InvalidArgument for bad options; FailedPrecondition for a file gpuop refuses
  // to edit; Unavailable when files were written but the restart failed (the message
  // says what was written); Aborted while another operation holds the lock.
  [[nodiscard]] absl::StatusOr<ChangeReport> Configure(Runtime runtime, const Options& options);

  // Takes gpuop's configuration out of `runtime`, handlers included, given the options configure
  // used (they tell whether an edited file still holds only what gpuop wrote, as ForHost applies
  // them, or with gpuop's handler whose binary is gone already). A node's file that was changed
  // after gpuop configured it is not restored, since that would discard the change:
  // FailedPrecondition, nothing done, unless `force`, which restores the backup anyway.
  [[nodiscard]] absl::StatusOr<ChangeReport> Unconfigure(Runtime runtime, const Options& options,
                                                         bool force = false);

  // Per file: configured (holds what `options` asks for), drifted (gpuop configured it, but it
  // no longer does) or not configured; and whether a restart is pending. Reads only. Errors as
  // Configure for malformed files.
  [[nodiscard]] absl::StatusOr<StatusReport> Status(Runtime runtime, const Options& options) const;

 private:
  Plan PlanFor(Runtime runtime, const Options& options, std::vector<std::string>* notes) const;
  absl::Status FinishWithRestart(Runtime runtime, ChangeReport& report);

  HostFiles files_;
  Restarter& restarter_;
};

}  // namespace gpuop::agent::runtime

#endif  // GPUOP_AGENT_RUNTIME_CONFIGURATOR_H_
