#ifndef GPUOP_AGENT_CDI_SPEC_H_
#define GPUOP_AGENT_CDI_SPEC_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpuop::agent::cdi {

// A Container Device Interface spec (cncf-tags/container-device-interface, specs-go v1.1.0): the
// file a CDI-enabled runtime reads from /etc/cdi or /var/run/cdi to turn a device name such as
// "nvidia.com/gpu=0" into device nodes, mounts, hooks and environment for a container.
//
// Fields mirror the JSON keys (snake_case here, camelCase in the file). An empty string, vector
// or map and an empty optional mean "absent" and are not serialised. The model carries what a
// GPU spec needs; `intelRdt` is not modelled (SpecFromJson rejects it).

inline constexpr char kCurrentCdiVersion[] = "1.1.0";
// The oldest version the reference library still loads; the floor of MinimumCdiVersion.
inline constexpr char kOldestCdiVersion[] = "0.3.0";

struct DeviceNode {
  std::string path;       // in the container; required
  std::string host_path;  // on the host; empty = same as path (needs >= 0.5.0 when set)
  std::string type;       // "c", "b", "p"; empty = the runtime stats host_path
  std::optional<int64_t> major;
  std::optional<int64_t> minor;
  std::optional<uint32_t> file_mode;
  std::string permissions;  // subset of "rwm"; empty = "rwm"
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;

  friend bool operator==(const DeviceNode&, const DeviceNode&) = default;
};

struct Mount {
  std::string host_path;       // required
  std::string container_path;  // required
  std::vector<std::string> options;
  std::string type;  // needs >= 0.4.0 when set

  friend bool operator==(const Mount&, const Mount&) = default;
};

struct Hook {
  std::string hook_name;  // createRuntime, createContainer, startContainer, poststart, poststop
  std::string path;       // absolute, on the host
  std::vector<std::string> args;  // argv, argv[0] included
  std::vector<std::string> env;
  std::optional<int> timeout;  // seconds, > 0 when set

  friend bool operator==(const Hook&, const Hook&) = default;
};

struct NetDevice {
  std::string host_interface_name;
  std::string name;

  friend bool operator==(const NetDevice&, const NetDevice&) = default;
};

struct ContainerEdits {
  std::vector<std::string> env;  // "NAME=value"
  std::vector<DeviceNode> device_nodes;
  std::vector<Mount> mounts;
  std::vector<Hook> hooks;
  std::vector<uint32_t> additional_gids;  // needs >= 0.7.0
  std::vector<NetDevice> net_devices;     // needs >= 1.1.0

  bool empty() const {
    return env.empty() && device_nodes.empty() && mounts.empty() && hooks.empty() &&
           additional_gids.empty() && net_devices.empty();
  }
  friend bool operator==(const ContainerEdits&, const ContainerEdits&) = default;
};

struct Device {
  std::string name;                                // the part after '=' in "vendor/class=name"
  std::map<std::string, std::string> annotations;  // needs >= 0.6.0
  ContainerEdits container_edits;

  friend bool operator==(const Device&, const Device&) = default;
};

struct Spec {
  std::string cdi_version;                         // "0.5.0"
  std::string kind;                                // "nvidia.com/gpu"
  std::map<std::string, std::string> annotations;  // needs >= 0.6.0
  std::vector<Device> devices;                     // at least one in a valid spec
  ContainerEdits container_edits;  // applied when any device of this spec is requested

  friend bool operator==(const Spec&, const Spec&) = default;
};

// A parsed "major.minor.patch" version; a leading 'v' is accepted, as by the reference library.
struct CdiVersion {
  int major = 0;
  int minor = 0;
  int patch = 0;

  friend auto operator<=>(const CdiVersion&, const CdiVersion&) = default;
};

// InvalidArgument naming the text when it is not "[v]N.N.N".
[[nodiscard]] absl::StatusOr<CdiVersion> ParseCdiVersion(absl::string_view text);

// True for the versions the reference library knows (0.1.0 ... 1.1.0).
bool IsKnownCdiVersion(const CdiVersion& version);

// The lowest spec version that covers every field `spec` uses, never below kOldestCdiVersion:
//   0.4.0  a mount with a type
//   0.5.0  a device node with a hostPath; a device name starting with a digit
//   0.6.0  annotations on the spec or a device; a '.' in the class part of the kind
//   0.7.0  additionalGids
//   1.1.0  netDevices
// Loading fails when a file's cdiVersion is lower than this, so generators write exactly this.
std::string MinimumCdiVersion(const Spec& spec);

// JSON in the CDI file layout, keys in the order of the specification's tables. Never throws.
nlohmann::ordered_json SpecToJson(const Spec& spec);
// SpecToJson, indented by two spaces, with a final newline. Deterministic for equal specs.
std::string SpecToJsonText(const Spec& spec);

// Parses a JSON spec. Unknown keys and wrong types are InvalidArgument naming the JSON path
// ("devices[2].containerEdits.mounts[0].hostPath: expected a string"), like the reference
// loader, which rejects unknown fields. Does not validate names or versions (ValidateSpec does).
[[nodiscard]] absl::StatusOr<Spec> SpecFromJson(absl::string_view text);

// YAML in the CDI file layout. Every string is double-quoted so that names like "0" or versions
// stay strings for YAML 1.1 readers. Deterministic for equal specs.
std::string SpecToYaml(const Spec& spec);

}  // namespace gpuop::agent::cdi

#endif  // GPUOP_AGENT_CDI_SPEC_H_
