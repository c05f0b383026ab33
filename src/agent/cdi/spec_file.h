#ifndef GPUOP_AGENT_CDI_SPEC_FILE_H_
#define GPUOP_AGENT_CDI_SPEC_FILE_H_

#include <filesystem>
#include <string>

#include "absl/status/statusor.h"
#include "agent/cdi/spec.h"

namespace gpuop::agent::cdi {

// Where a generated spec lives. Runtimes scan /etc/cdi (static) and /var/run/cdi (dynamic, wins
// over /etc/cdi); generated specs belong in the dynamic directory. The name's extension picks
// the format: ".json" or ".yaml". Two files in one directory must not define the same device, so
// the name should be unique to this agent and vendor ("gpuop-nvidia.json").
struct SpecFile {
  std::filesystem::path dir = "/var/run/cdi";
  std::string name;

  std::filesystem::path path() const { return dir / name; }
};

// The file content for `spec` in the format `file.name` asks for. InvalidArgument when the name
// is empty, contains '/', or ends in neither ".json" nor ".yaml".
[[nodiscard]] absl::StatusOr<std::string> RenderSpecFile(const Spec& spec, const SpecFile& file);

// Validates `spec` (ValidateSpec) and writes it to `file` unless the file already holds exactly
// that content. Returns true when the file was written, false when it was already up to date
// ("unchanged"), so that regenerating on every layout event costs a read, not a write and an
// inotify event in every runtime. The write is atomic (common::WriteFileAtomically, mode 0644,
// directory created): a runtime sees the old spec or the new one, never a mix. Errors name the
// file.
[[nodiscard]] absl::StatusOr<bool> WriteSpec(const Spec& spec, const SpecFile& file);

// Removes `file` (InvalidArgument unless the name is a plain file name). Returns true when a file
// was removed, false when there was none.
[[nodiscard]] absl::StatusOr<bool> RemoveSpec(const SpecFile& file);

}  // namespace gpuop::agent::cdi

#endif  // GPUOP_AGENT_CDI_SPEC_FILE_H_
