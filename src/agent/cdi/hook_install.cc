#include "agent/cdi/hook_install.h"

#include <system_error>

#include "absl/strings/str_cat.h"
#include "common/files.h"

namespace gpuop::agent::cdi {

namespace fs = std::filesystem;

absl::StatusOr<bool> InstallHook(const fs::path& source, const fs::path& destination) {
  absl::StatusOr<std::string> binary = common::ReadFile(source);
  if (!binary.ok()) {
    return absl::Status(binary.status().code(),
                        absl::StrCat("install the CDI hook: ", binary.status().message()));
  }
  if (binary->empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("install the CDI hook: ", source.string(), " is empty"));
  }
  constexpr fs::perms kMode = fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec;
  absl::StatusOr<std::optional<std::string>> current = common::ReadFileIfExists(destination);
  std::error_code ec;
  const fs::file_status status = fs::status(destination, ec);
  if (current.ok() && current->has_value() && **current == *binary && !ec &&
      fs::is_regular_file(status) && (status.permissions() & fs::perms::mask) == kMode) {
    return false;
  }
  if (absl::Status written = common::WriteFileAtomically(destination, *binary, kMode);
      !written.ok()) {
    return absl::Status(
        written.code(),
        absl::StrCat("install the CDI hook at ", destination.string(), ": ", written.message()));
  }
  return true;
}

fs::path HookBesideSelf() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return fs::path("/usr/local/bin") / kHookName;
  return self.parent_path() / kHookName;
}

}  // namespace gpuop::agent::cdi
