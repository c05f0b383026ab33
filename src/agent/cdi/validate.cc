#include "agent/cdi/validate.h"

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/cdi/name_rules.h"

namespace gpuop::agent::cdi {
namespace {

using name_rules::kMaxClassLength;
using name_rules::kMaxVendorLength;

// The vendor and class rules, which differ only in what they are called and their length.
absl::Status ValidateQualifierPart(absl::string_view what, absl::string_view name,
                                   size_t max_length) {
  if (name.empty()) return absl::InvalidArgumentError(absl::StrCat("CDI ", what, " is empty"));
  if (const std::string problem =
          name_rules::QualifierProblem(std::string_view(name.data(), name.size()), max_length);
      !problem.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("CDI ", what, " \"", name, "\" ", problem));
  }
  return absl::OkStatus();
}

bool IsKnownHookName(absl::string_view name) {
  return name == "prestart" || name == "createRuntime" || name == "createContainer" ||
         name == "startContainer" || name == "poststart" || name == "poststop";
}

bool IsValidEnv(absl::string_view entry) {
  const size_t equals = entry.find('=');
  return equals != absl::string_view::npos && equals > 0;
}

// Appends to `problems` what is wrong with one ContainerEdits; `where` names its owner.
void CheckEdits(const ContainerEdits& edits, const std::string& where,
                std::vector<std::string>& problems) {
  for (const std::string& entry : edits.env) {
    if (!IsValidEnv(entry)) {
      problems.push_back(absl::StrCat(where, ": env entry \"", entry, "\" is not NAME=value"));
    }
  }
  for (const DeviceNode& node : edits.device_nodes) {
    if (node.path.empty() || node.path.front() != '/') {
      problems.push_back(
          absl::StrCat(where, ": device node path \"", node.path, "\" is not absolute"));
    }
    if (!node.type.empty() && node.type != "b" && node.type != "c" && node.type != "u" &&
        node.type != "p") {
      problems.push_back(absl::StrCat(where, ": device node ", node.path, " has type \"", node.type,
                                      "\"; expected b, c, u or p"));
    }
    if (node.permissions.find_first_not_of("rwm") != std::string::npos) {
      problems.push_back(absl::StrCat(where, ": device node ", node.path, " has permissions \"",
                                      node.permissions, "\"; expected a subset of rwm"));
    }
  }
  for (const Mount& mount : edits.mounts) {
    if (mount.host_path.empty() || mount.container_path.empty()) {
      problems.push_back(absl::StrCat(where, ": mount \"", mount.host_path, "\" -> \"",
                                      mount.container_path,
                                      "\" needs both hostPath and containerPath"));
    }
  }
  for (const Hook& hook : edits.hooks) {
    if (!IsKnownHookName(hook.hook_name)) {
      problems.push_back(absl::StrCat(where, ": hook ", hook.path, " has unknown hookName \"",
                                      hook.hook_name, "\""));
    }
    if (hook.path.empty() || hook.path.front() != '/') {
      problems.push_back(absl::StrCat(where, ": ", hook.hook_name, " hook path \"", hook.path,
                                      "\" is not absolute"));
    }
    if (hook.timeout.has_value() && *hook.timeout <= 0) {
      problems.push_back(absl::StrCat(where, ": hook ", hook.path, " has timeout ", *hook.timeout,
                                      "; it must be positive"));
    }
    for (const std::string& entry : hook.env) {
      if (!IsValidEnv(entry)) {
        problems.push_back(absl::StrCat(where, ": hook ", hook.path, " env entry \"", entry,
                                        "\" is not NAME=value"));
      }
    }
  }
}

void CheckAnnotations(const std::map<std::string, std::string>& annotations,
                      const std::string& where, std::vector<std::string>& problems) {
  if (annotations.contains("")) problems.push_back(where + ": annotation with an empty key");
}

}  // namespace

absl::Status ValidateVendorName(absl::string_view vendor) {
  return ValidateQualifierPart("vendor", vendor, kMaxVendorLength);
}

absl::Status ValidateClassName(absl::string_view device_class) {
  return ValidateQualifierPart("class", device_class, kMaxClassLength);
}

absl::Status ValidateKind(absl::string_view kind) {
  const size_t slash = kind.find('/');
  if (slash == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("CDI kind \"", kind, "\" must be <vendor>/<class>, such as nvidia.com/gpu"));
  }
  if (absl::Status status = ValidateVendorName(kind.substr(0, slash)); !status.ok()) {
    return status;
  }
  return ValidateClassName(kind.substr(slash + 1));
}

absl::Status ValidateDeviceName(absl::string_view name) {
  if (name.empty()) return absl::InvalidArgumentError("CDI device name is empty");
  if (const std::string problem =
          name_rules::DeviceNameProblem(std::string_view(name.data(), name.size()));
      !problem.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("CDI device name \"", name, "\" ", problem));
  }
  return absl::OkStatus();
}

absl::Status ValidateSpec(const Spec& spec) {
  std::vector<std::string> problems;
  const std::string minimum = MinimumCdiVersion(spec);
  if (absl::StatusOr<CdiVersion> version = ParseCdiVersion(spec.cdi_version); !version.ok()) {
    problems.push_back(std::string(version.status().message()));
  } else if (!IsKnownCdiVersion(*version)) {
    problems.push_back(
        absl::StrCat("CDI version \"", spec.cdi_version, "\" is not a known version"));
  } else if (*version < *ParseCdiVersion(minimum)) {
    problems.push_back(absl::StrCat("CDI version ", spec.cdi_version,
                                    " is too old for the fields used; it must be at least ",
                                    minimum));
  }
  if (absl::Status status = ValidateKind(spec.kind); !status.ok()) {
    problems.push_back(std::string(status.message()));
  }
  CheckAnnotations(spec.annotations, "spec", problems);
  if (spec.devices.empty()) problems.push_back("spec has no devices");
  std::set<std::string> names;
  for (const Device& device : spec.devices) {
    const std::string where = absl::StrCat("device \"", device.name, "\"");
    if (absl::Status status = ValidateDeviceName(device.name); !status.ok()) {
      problems.push_back(std::string(status.message()));
    }
    if (!names.insert(device.name).second) problems.push_back(where + " is defined twice");
    if (device.container_edits.empty()) problems.push_back(where + " has no container edits");
    CheckAnnotations(device.annotations, where, problems);
    CheckEdits(device.container_edits, where, problems);
  }
  CheckEdits(spec.container_edits, "spec containerEdits", problems);
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("invalid CDI spec ", spec.kind, ": ", absl::StrJoin(problems, "; ")));
}

}  // namespace gpuop::agent::cdi
