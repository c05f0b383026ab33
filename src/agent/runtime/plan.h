#ifndef GPUOP_AGENT_RUNTIME_PLAN_H_
#define GPUOP_AGENT_RUNTIME_PLAN_H_

// The files gpuop manages for one runtime, as the Configurator's shared apply skeleton sees them.
// Each runtime module (containerd, crio, docker) only says which files and what they should hold;
// reading, backing up, writing, restoring and restarting are the Configurator's. Internal to
// agent/runtime.

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gpuop::agent::runtime {

struct ManagedFile {
  enum class Kind {
    // gpuop's own file: created by configure, removed by unconfigure, no backup.
    kDropIn,
    // The node's file, edited in place: its original bytes are kept in `<path>.gpuop-backup`
    // (or, when it did not exist, `<path>.gpuop-created` marks it as gpuop's), and unconfigure
    // puts them back.
    kEdited,
  };

  std::filesystem::path path;  // host path
  Kind kind = Kind::kDropIn;
  // The bytes gpuop wants in the file, given its current bytes (nullopt: absent). A drop-in
  // ignores them (its content derives from other files). An edited file returns `current`
  // unchanged, byte for byte, when it already means what gpuop wants, so a second configure
  // writes nothing. Deterministic. Errors name the file, line and problem.
  std::function<absl::StatusOr<std::string>(const std::optional<std::string>& current)> desired;
  // Past tense for reports: "wrote", "added imports to", "updated".
  std::string verb;
  // A file gpuop creates takes its permission bits from this file (the main configuration,
  // which may hold registry credentials) when it exists; otherwise 0644.
  std::optional<std::filesystem::path> mode_from;
};

// A configuration file the runtime loads before gpuop's drop-in (containerd: a file the main
// configuration imports; CRI-O: crio.conf and the other drop-ins), with its bytes.
struct ImportedFile {
  std::filesystem::path path;  // host path, named in errors
  std::string content;
};

// In write order: a file that references another comes after it (containerd's main file, whose
// imports name the drop-in, after the drop-in). Unconfigure works in reverse.
using Plan = std::vector<ManagedFile>;

}  // namespace gpuop::agent::runtime

#endif  // GPUOP_AGENT_RUNTIME_PLAN_H_
