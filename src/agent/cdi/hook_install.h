#ifndef GPUOP_AGENT_CDI_HOOK_INSTALL_H_
#define GPUOP_AGENT_CDI_HOOK_INSTALL_H_

#include <filesystem>

#include "absl/status/statusor.h"

namespace gpuop::agent::cdi {

// Where the CDI component puts gpuop-cdi-hook on the host, and so the path its spec names: the
// runtime runs the hook in the host's mount namespace, so it must be a host file, and gpuop's
// state lives under /var/lib/gpuop (not /usr/local/nvidia, which is NVIDIA's toolkit's).
inline constexpr char kHookName[] = "gpuop-cdi-hook";
inline constexpr char kHookHostPath[] = "/var/lib/gpuop/bin/gpuop-cdi-hook";

// Copies the hook binary `source` (in gpuop's image) to `destination` (as this process opens
// it) unless it already holds the same bytes with mode 0755 (common::InstallExecutable). The copy
// is atomic (common::WriteFileAtomically: temp file, fsync, rename), so a runtime starting a
// container meanwhile runs the old binary or the new one, never a partial file; the directory is
// created. Returns true when it wrote. Errors name the file: NotFound for a missing source.
[[nodiscard]] absl::StatusOr<bool> InstallHook(const std::filesystem::path& source,
                                               const std::filesystem::path& destination);

// The hook beside the running executable ("/usr/local/bin/gpuop-cdi-hook" for
// /usr/local/bin/gpuop-agent): where gpuop's image has it.
std::filesystem::path HookBesideSelf();

}  // namespace gpuop::agent::cdi

#endif  // GPUOP_AGENT_CDI_HOOK_INSTALL_H_
