#ifndef GPUOP_AGENT_CDI_INJECT_CDI_SPEC_H_
#define GPUOP_AGENT_CDI_INJECT_CDI_SPEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/cdi/inject/status.h"

// The parts of a CDI spec file (cncf-tags/container-device-interface, specs-go) that the runtime
// wrapper applies to a container, read from JSON.
namespace gpuop::agent::cdi::inject {

struct DeviceNode {
  std::string path;                   // in the container
  std::string host_path;              // empty: the same as `path`
  std::string type;                   // "c", "b", "u", "p"; empty: from the host
  std::optional<int64_t> major;       // absent: from the host
  std::optional<int64_t> minor;       // absent: from the host
  std::optional<uint32_t> file_mode;  // Go's os.FileMode bits
  std::string permissions;            // a subset of "rwm"; empty means "rwm"
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
};

struct Mount {
  std::string host_path;
  std::string container_path;
  std::string type;  // empty: "bind"
  std::vector<std::string> options;
};

struct Hook {
  std::string hook_name;  // prestart, createRuntime, createContainer, startContainer,
                          // poststart or poststop
  std::string path;       // absolute, on the host
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::optional<int64_t> timeout;  // seconds, > 0
};

struct ContainerEdits {
  std::vector<std::string> env;  // "NAME=value"
  std::vector<DeviceNode> device_nodes;
  std::vector<Mount> mounts;
  std::vector<Hook> hooks;
  std::vector<uint32_t> additional_gids;
  // Fields of the CDI format this wrapper cannot apply (intelRdt, netDevices), by JSON name; a
  // container that asks for edits with any of them is refused rather than given part of them.
  std::vector<std::string> unsupported;
};

struct Device {
  std::string name;  // the part after '=' in "<kind>=<name>"
  ContainerEdits edits;
};

struct Spec {
  std::string file;  // where it was read from, for messages
  std::string cdi_version;
  std::string kind;      // "<vendor>/<class>"
  ContainerEdits edits;  // applied once when any of its devices is
  std::vector<Device> devices;

  // The device named `name`, or nullptr.
  const Device* FindDevice(std::string_view name) const;
};

// Parses a CDI spec in JSON. The text is untrusted: never throws, and every problem is an error
// naming `file` and the field ("<file>: devices[1].containerEdits.deviceNodes[0].major: not an
// integer"). Checks what the reference library checks before using a spec: cdiVersion is a
// string; kind and device names follow the name rules (device_names.h); device names are unique;
// env entries are "NAME=value"; device nodes have an absolute path, a type among "", b, c, u, p
// and permissions within "rwm"; mounts have a hostPath and an absolute containerPath; hooks have
// a known hookName, an absolute path and a positive timeout when one is set; numbers are integers
// in their field's range. Keys it does not know (annotations, ...) are ignored.
StatusOr<Spec> ParseSpecJson(std::string_view text, const std::string& file);

}  // namespace gpuop::agent::cdi::inject

#endif  // GPUOP_AGENT_CDI_INJECT_CDI_SPEC_H_
