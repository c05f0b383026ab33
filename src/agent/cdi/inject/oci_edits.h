#ifndef GPUOP_AGENT_CDI_INJECT_OCI_EDITS_H_
#define GPUOP_AGENT_CDI_INJECT_OCI_EDITS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/cdi/inject/cdi_spec.h"
#include "agent/cdi/inject/spec_lookup.h"
#include "agent/cdi/inject/status.h"

// Applies CDI container edits to an OCI runtime spec (a bundle's config.json), with the semantics
// of CDI's reference library (pkg/cdi/container-edits.go).
namespace gpuop::agent::cdi::inject {

// One set of edits to apply and where it comes from, for messages.
struct EditsSource {
  std::string device;  // the requested device that brought it in ("nvidia.com/gpu=0")
  std::string file;    // the spec file
  const ContainerEdits* edits = nullptr;
};

// The edits for `devices`, in the reference library's order: for each device, its spec's
// spec-wide edits the first time that spec is met, then the device's own.
std::vector<EditsSource> CollectEdits(const std::vector<ResolvedDevice>& devices);

// What the host says about a device node.
struct HostDevice {
  std::string type;  // "c", "b" or "p"
  int64_t major = 0;
  int64_t minor = 0;
};
using StatDeviceFn = std::function<StatusOr<HostDevice>(const std::string& host_path)>;

// stat() of `host_path` (symlinks followed); an error when it is not a character or block device
// or a FIFO.
StatusOr<HostDevice> StatHostDevice(const std::string& host_path);

// Device nodes under this container path are given only to a container whose
// process.capabilities.effective holds CAP_SYS_ADMIN: NVIDIA's MIG capability nodes, which
// libnvidia-container hands out (NVIDIA_MIG_CONFIG_DEVICES, NVIDIA_MIG_MONITOR_DEVICES) only to
// such containers.
inline constexpr char kSysAdminDevicePrefix[] = "/dev/nvidia-caps/";

// Applies `sources` to `config`. On error `config` is unchanged. Errors name the device and the
// edit, or the config.json field whose type is wrong. The edits:
//   env             replaces the value of a variable process.env already sets, else appends.
//   deviceNodes     hostPath defaults to path; a missing type, or a major of 0 for a type other
//                   than "p", comes from `stat_device` (the host's node); a type that disagrees
//                   with the host's is an error. Added to linux.devices {path, type, major,
//                   minor, fileMode, uid, gid} in place of an entry with the same path, uid and
//                   gid defaulting to process.user's when not 0; a "c" or "b" node is allowed in
//                   linux.resources.devices {allow, type, major, minor, access (permissions, or
//                   "rwm")}. A node under kSysAdminDevicePrefix without CAP_SYS_ADMIN is refused.
//   mounts          {destination, type ("bind" when absent), source, options} in place of a
//                   mount with the same destination; then all mounts are stably sorted by the
//                   depth of their destination, so a parent is mounted before its children.
//   hooks           appended to hooks.<hookName>: {path, args, env, timeout}.
//   additionalGids  added to process.user.additionalGids unless there already or 0.
// Edits using a CDI field this wrapper cannot apply (intelRdt, netDevices) are refused.
Status ApplyEdits(nlohmann::ordered_json& config, const std::vector<EditsSource>& sources,
                  const StatDeviceFn& stat_device = StatHostDevice);

}  // namespace gpuop::agent::cdi::inject

#endif  // GPUOP_AGENT_CDI_INJECT_OCI_EDITS_H_
