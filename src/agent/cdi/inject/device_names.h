#ifndef GPUOP_AGENT_CDI_INJECT_DEVICE_NAMES_H_
#define GPUOP_AGENT_CDI_INJECT_DEVICE_NAMES_H_

#include <string>
#include <string_view>
#include <vector>

#include "agent/cdi/inject/status.h"

// CDI device names and the container's request for them.
namespace gpuop::agent::cdi::inject {

// The container environment variable that names the CDI devices a container asks for, as
// comma-separated fully qualified names ("management.gpuop.io/gpu=all,nvidia.com/gpu=0").
inline constexpr char kDevicesEnv[] = "GPUOP_CDI_DEVICES";

// A fully qualified CDI device name, "<vendor>/<class>=<name>".
struct QualifiedName {
  std::string vendor;        // "nvidia.com"
  std::string device_class;  // "gpu"
  std::string name;          // "0", "0:1", "all"

  std::string kind() const { return vendor + "/" + device_class; }
  std::string full() const { return kind() + "=" + name; }
  bool operator==(const QualifiedName&) const = default;
};

// The name rules of CDI's reference parser (pkg/parser); letters are ASCII. Each returns an
// error naming the offending text and the rule it breaks.
//   vendor: starts with a letter, ends with a letter or digit, inner characters letters, digits,
//           '_', '-', '.'; at most 253 characters (a DNS subdomain).
//   class:  the vendor's characters; at most 63 characters.
//   name:   starts and ends with a letter or digit, inner characters letters, digits, '_', '-',
//           '.', ':'.
Status ValidateVendor(std::string_view vendor);
Status ValidateClass(std::string_view device_class);
Status ValidateDeviceName(std::string_view name);
// A kind "<vendor>/<class>", split at the first '/'.
Status ValidateKind(std::string_view kind);

// Parses and validates "<vendor>/<class>=<name>" (split at the first '=', then the first '/').
StatusOr<QualifiedName> ParseQualifiedName(std::string_view text);

// The devices a GPUOP_CDI_DEVICES value asks for, in order, without duplicates. Spaces around a
// name and empty items (",,", a trailing comma) are ignored; any other malformed name is an error
// naming it.
StatusOr<std::vector<QualifiedName>> ParseDeviceRequests(std::string_view value);

}  // namespace gpuop::agent::cdi::inject

#endif  // GPUOP_AGENT_CDI_INJECT_DEVICE_NAMES_H_
