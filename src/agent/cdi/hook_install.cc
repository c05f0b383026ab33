#include "agent/cdi/hook_install.h"

#include "common/files.h"

namespace gpuop::agent::cdi {

namespace fs = std::filesystem;

absl::StatusOr<bool> InstallHook(const fs::path& source, const fs::path& destination) {
  return common::InstallExecutable(source, destination, "the CDI hook");
}

fs::path HookBesideSelf() { return common::BesideSelf(kHookName); }

}  // namespace gpuop::agent::cdi
