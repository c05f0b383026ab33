#ifndef GPUOP_AGENT_CDI_VALIDATE_H_
#define GPUOP_AGENT_CDI_VALIDATE_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "agent/cdi/spec.h"

namespace gpuop::agent::cdi {

// The CDI name rules of the reference parser (pkg/parser) and SPEC.md. Letters are ASCII.
// Each check returns InvalidArgument naming the offending name and the rule it breaks, e.g.
//   CDI device name "0:" must end with a letter or digit

// Vendor ("nvidia.com"): starts with a letter, ends with a letter or digit, inner characters
// letters, digits, '_', '-', '.'; at most 253 characters (a DNS subdomain).
[[nodiscard]] absl::Status ValidateVendorName(absl::string_view vendor);

// Class ("gpu"): the vendor's character rules; at most 63 characters.
[[nodiscard]] absl::Status ValidateClassName(absl::string_view device_class);

// Kind "<vendor>/<class>", split at the first '/'.
[[nodiscard]] absl::Status ValidateKind(absl::string_view kind);

// Device name ("0", "GPU-1f0e...", "0:1"): starts and ends with a letter or digit, inner
// characters letters, digits, '_', '-', '.', ':'. A leading digit is legal but needs spec
// version >= 0.5.0, which ValidateSpec checks against the file's cdiVersion.
[[nodiscard]] absl::Status ValidateDeviceName(absl::string_view name);

// Checks what the reference library checks when it loads a spec, all at once, and reports every
// problem in one InvalidArgument message ("; "-separated), each naming its device or field:
//   - cdiVersion is a known version and not below MinimumCdiVersion(spec);
//   - the kind and every device name follow the rules above; device names are unique;
//   - there is at least one device, and each device has some container edits;
//   - env entries are "NAME=value" with a non-empty NAME;
//   - device nodes have an absolute path, a type among "", b, c, u, p and permissions that are
//     a subset of "rwm";
//   - mounts have a hostPath and a containerPath;
//   - hooks have a known hookName (prestart, createRuntime, createContainer, startContainer,
//     poststart, poststop), an absolute path, valid env and, if set, a positive timeout;
//   - annotation keys are not empty.
[[nodiscard]] absl::Status ValidateSpec(const Spec& spec);

}  // namespace gpuop::agent::cdi

#endif  // GPUOP_AGENT_CDI_VALIDATE_H_
