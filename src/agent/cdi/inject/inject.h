#ifndef GPUOP_AGENT_CDI_INJECT_INJECT_H_
#define GPUOP_AGENT_CDI_INJECT_INJECT_H_

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/cdi/inject/device_names.h"
#include "agent/cdi/inject/oci_edits.h"
#include "agent/cdi/inject/spec_lookup.h"
#include "agent/cdi/inject/status.h"

// gpuop-container-runtime's edit of a container before runc creates it: the CDI devices its
// environment names (GPUOP_CDI_DEVICES) are applied to its bundle's config.json.
namespace gpuop::agent::cdi::inject {

// The variable (in the wrapper's own environment, which containerd sets, not the container's)
// that replaces the spec directories: colon-separated, later ones taking precedence.
inline constexpr char kSpecDirsEnv[] = "GPUOP_CDI_SPEC_DIRS";

struct InjectOptions {
  std::vector<std::string> spec_dirs = DefaultSpecDirs();  // later ones take precedence
  StatDeviceFn stat_device = StatHostDevice;
};

// The devices an OCI runtime spec asks for through GPUOP_CDI_DEVICES in process.env; nullopt when
// it does not set the variable (when several entries set it, the last one counts, as for the
// process). An error when process.env has the wrong type or a name is invalid.
StatusOr<std::optional<std::vector<QualifiedName>>> RequestedDevices(
    const nlohmann::ordered_json& config);

enum class InjectResult {
  kNotRequested,  // no GPUOP_CDI_DEVICES: config.json was not touched
  kUnchanged,     // the devices' edits were already there: config.json was not touched
  kRewritten,     // config.json was replaced with the edited spec
};

// Applies the devices <bundle>/config.json asks for (RequestedDevices, ResolveDevices,
// ApplyEdits) and replaces the file atomically (same mode) when that changed it. The key order
// and every field the edits do not touch are kept; the file is written compact, as containerd
// writes it. Errors name the bundle's config.json or the device and spec at fault; on error the
// file is unchanged.
StatusOr<InjectResult> InjectIntoBundle(const std::string& bundle, const InjectOptions& options);

}  // namespace gpuop::agent::cdi::inject

#endif  // GPUOP_AGENT_CDI_INJECT_INJECT_H_
