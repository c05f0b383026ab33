#include "test/fakes/nvml/call_errors.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "test/fakes/nvml/yaml_reader.h"

namespace gpuop::fakenvml {

absl::StatusOr<nvmlReturn_t> ParseInjectedError(absl::string_view name) {
  static constexpr std::pair<absl::string_view, nvmlReturn_t> kErrors[] = {
      {"NO_PERMISSION", NVML_ERROR_NO_PERMISSION},
      {"UNKNOWN", NVML_ERROR_UNKNOWN},
      {"NOT_SUPPORTED", NVML_ERROR_NOT_SUPPORTED},
      {"TIMEOUT", NVML_ERROR_TIMEOUT},
  };
  for (const auto& [known, code] : kErrors) {
    if (name == known) return code;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown error \"", name, "\" (NO_PERMISSION, UNKNOWN, NOT_SUPPORTED, TIMEOUT)"));
}

absl::StatusOr<CallErrors> ReadCallErrors(const YAML::Node& node, absl::string_view path) {
  GPUOP_RETURN_IF_ERROR(RequireMap(node, path));
  CallErrors errors;
  for (const auto& entry : node) {
    const std::string call = entry.first.Scalar();
    const std::string at = ChildPath(path, call);
    if (call != "*" && !absl::StartsWith(call, "nvml")) {
      return FieldError(at, "expected an NVML function name (nvml...) or \"*\"");
    }
    GPUOP_ASSIGN_OR_RETURN(const std::string name, ReadString(entry.second, at));
    absl::StatusOr<nvmlReturn_t> error = ParseInjectedError(name);
    if (!error.ok()) return FieldError(at, error.status().message());
    errors[call] = *error;
  }
  return errors;
}

nvmlReturn_t InjectedError(const CallErrors& errors, std::string_view call) {
  if (errors.empty()) return NVML_SUCCESS;
  if (auto it = errors.find(call); it != errors.end()) return it->second;
  if (auto it = errors.find("*"); it != errors.end()) return it->second;
  return NVML_SUCCESS;
}

std::string_view CallName(std::string_view pretty_function) {
  std::string_view name = pretty_function.substr(0, pretty_function.find('('));
  if (const size_t space = name.find_last_of(" *&"); space != std::string_view::npos) {
    name.remove_prefix(space + 1);
  }
  return name;
}

}  // namespace gpuop::fakenvml
