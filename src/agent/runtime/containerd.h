#ifndef GPUOP_AGENT_RUNTIME_CONTAINERD_H_
#define GPUOP_AGENT_RUNTIME_CONTAINERD_H_

// containerd's configuration: the main file's version and imports, the minimal edit that adds
// gpuop's drop-in to its imports, and the drop-in itself. Pure functions over file contents, plus
// the Plan that binds them to the host's files.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agent/runtime/host_files.h"
#include "agent/runtime/plan.h"
#include "agent/runtime/runtime.h"

namespace gpuop::agent::runtime {

inline constexpr char kContainerdConfigPath[] = "/etc/containerd/config.toml";
inline constexpr char kContainerdDropInPath[] = "/etc/containerd/conf.d/99-gpuop.toml";
// The imports entry gpuop adds. A glob, because containerd fails to start when an import without
// '*' names a missing file, and a glob that matches nothing is fine: a deleted drop-in, or an
// unconfigure interrupted between its two steps, never keeps containerd from starting. It
// matches no file but gpuop's, unlike the common "conf.d/*.toml", which could wake up stale
// files left in conf.d by other tools.
inline constexpr char kContainerdImportEntry[] = "/etc/containerd/conf.d/99-gpuop*.toml";

// containerd's CRI cdi_spec_dirs when no file sets it (containerd's docs/cri/config.md, 1.7 and
// 2.x alike).
inline constexpr const char* kContainerdDefaultCdiSpecDirs[] = {"/etc/cdi", "/var/run/cdi"};

// What gpuop reads from containerd's main configuration.
struct ContainerdConfig {
  // 1, 2, 3 or 4. A file without `version` (or with 0) is a version 1 file, as containerd reads
  // it: 1.x natively, 2.x after migrating it on every start.
  int64_t version = 0;
  // Whether the file says `version`: the drop-in says it exactly when the main file does.
  bool version_written = false;
  // The CRI runtime plugin's key under [plugins]: "cri" (its short ID) for version 1,
  // "io.containerd.grpc.v1.cri" for 2, "io.containerd.cri.v1.runtime" for 3 and 4.
  std::string cri_plugin;
  std::vector<std::string> imports;  // as written (may be globs, may be relative)
};

// Parses and checks the main configuration `content` of `file`. FailedPrecondition, naming the
// file, line and problem, for: invalid TOML; a version other than 0 to 4; a wrong type at a key
// gpuop reads (version, imports, disabled_plugins, plugins, the CRI plugin table); the CRI plugin
// listed in disabled_plugins; a version 1 file that configures the CRI plugin under its version 2
// name, which containerd 1.x ignores there.
[[nodiscard]] absl::StatusOr<ContainerdConfig> InspectContainerdConfig(
    absl::string_view content, const std::filesystem::path& file = kContainerdConfigPath);

// True when an entry of `imports` (relative entries resolved against `main_file`'s directory,
// globs matched as containerd matches them) names `drop_in`.
bool ImportsCover(const std::vector<std::string>& imports, const std::filesystem::path& main_file,
                  const std::filesystem::path& drop_in);

// The main configuration `content` with kContainerdImportEntry appended to its top-level
// `imports`, or `content` itself when its imports already cover kContainerdDropInPath. The edit
// is textual and minimal so that comments and layout survive: a new `imports = [...]` line right
// after the `version` line (without one, after the comments and blank lines that open the file),
// or one more element after the last one of an existing array. The
// result is parsed back and must mean exactly the original plus that one import; otherwise
// Internal, and nothing to write. Errors as InspectContainerdConfig.
[[nodiscard]] absl::StatusOr<std::string> AddContainerdImport(
    absl::string_view content, const std::filesystem::path& file = kContainerdConfigPath);

// The main configuration gpuop creates on a node that has none, where containerd runs with its
// built-in defaults: `version = 2` (which containerd 1.7 and 2.x both read, and which sets no
// default apart) and the imports entry, nothing else. Unconfigure removes it again.
std::string NewContainerdConfig();

// gpuop's drop-in for the main configuration `main` and the files it imports. The CRI plugin
// table is the main file's merged with the imported files' in order, then changed per
// `options`. For version 3 and later (read by containerd 2.x only, which merges imports key by
// key since 2.0), and for any version when options.containerd_major is 2 or more, the drop-in
// holds only what gpuop changed (DeepDiff), so later edits of the main file show through; for
// versions 1 and 2 otherwise (containerd 1.x reads them, and replaces a plugin's table per file
// there), it holds the whole table, and a runtime handler added to
// it comes with an explicit runc entry (containerd's built-in one) when no file defines runc, so
// that a containerd that replaces the built-in runtimes with the file's keeps runc. The changes:
// enable_cdi, and
// cdi_spec_dirs merged (the files' list, or containerd's default, with the missing directories of
// options.cdi_spec_dirs appended; never replaced); when add_nvidia_runtime, a runtime entry
// `runtime_name` copied from the default runc runtime (the default runtime when runc-based, else
// `runc`; never one of gpuop's handlers; keeping options such as SystemdCgroup or a runc Root)
// with runtime_type = "io.containerd.runc.v2" and options.BinaryName = runtime_binary, unless the
// files already define a runtime of that name, which is kept as it is (and said in `notes`);
// when add_gpuop_runtime, an entry `gpuop_runtime_name` made the same way with options.BinaryName
// = gpuop_runtime_binary, written whether or not the files define one (gpuop owns the name; one
// that differed is said in `notes`; in a drop-in of changes alone, keys the node's entry has and
// gpuop's lacks stay, since containerd merges it key by key); default_runtime_name =
// runtime_name when set_as_default (gpuop's handler is never the default). The drop-in carries
// the main file's version
// (none when the main file says none). A main file without `version` read by containerd 2.x,
// which ignores the CRI settings of such a file, gets a version 3 drop-in of gpuop's changes to
// the built-in CRI settings (its own CRI table and imports are not read); with containerd's
// version unknown it is refused (FailedPrecondition), since 1.x and 2.x need different files.
// Errors
// as InspectContainerdConfig, for any of the files; InvalidArgument when the nvidia handler is to
// be added and runtime_binary is empty.
[[nodiscard]] absl::StatusOr<std::string> RenderContainerdDropIn(
    absl::string_view main, const std::vector<ImportedFile>& imported, const Options& options,
    std::vector<std::string>* notes = nullptr);

// The drop-in, then the main file's imports, bound to `files` (which must outlive the plan).
// Notes of the renderer go to `notes` when given (which must outlive the plan).
Plan ContainerdPlan(const HostFiles& files, const Options& options,
                    std::vector<std::string>* notes = nullptr);

}  // namespace gpuop::agent::runtime

#endif  // GPUOP_AGENT_RUNTIME_CONTAINERD_H_
