#include "agent/cdi/spec_file.h"

#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/cdi/validate.h"
#include "common/files.h"
#include "common/status_macros.h"

namespace gpuop::agent::cdi {
namespace {

absl::Status CheckName(const SpecFile& file) {
  if (file.name.empty() || file.name == "." || file.name == ".." ||
      absl::StrContains(file.name, "/")) {
    return absl::InvalidArgumentError(
        absl::StrCat("CDI spec file name \"", file.name, "\" must be a plain file name"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> RenderSpecFile(const Spec& spec, const SpecFile& file) {
  GPUOP_RETURN_IF_ERROR(CheckName(file));
  if (absl::EndsWith(file.name, ".json")) return SpecToJsonText(spec);
  if (absl::EndsWith(file.name, ".yaml")) return SpecToYaml(spec);
  return absl::InvalidArgumentError(absl::StrCat(
      "CDI spec file name \"", file.name, "\" must end in .json or .yaml; runtimes ignore others"));
}

absl::StatusOr<bool> WriteSpec(const Spec& spec, const SpecFile& file) {
  if (absl::Status status = ValidateSpec(spec); !status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("write ", file.path().string(), ": ", status.message()));
  }
  GPUOP_ASSIGN_OR_RETURN(const std::string content, RenderSpecFile(spec, file));
  const std::filesystem::path path = file.path();
  GPUOP_ASSIGN_OR_RETURN(const std::optional<std::string> current, common::ReadFileIfExists(path));
  if (current.has_value() && *current == content) return false;
  GPUOP_RETURN_IF_ERROR(common::WriteFileAtomically(path, content));
  return true;
}

absl::StatusOr<bool> RemoveSpec(const SpecFile& file) {
  GPUOP_RETURN_IF_ERROR(CheckName(file));
  std::error_code ec;
  const bool removed = std::filesystem::remove(file.path(), ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("remove ", file.path().string(), ": ", ec.message()));
  }
  return removed;
}

}  // namespace gpuop::agent::cdi
