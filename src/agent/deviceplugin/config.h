#ifndef GPUOP_AGENT_DEVICEPLUGIN_CONFIG_H_
#define GPUOP_AGENT_DEVICEPLUGIN_CONFIG_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace gpuop::agent {

// How MIG devices become resources (NVIDIA's three strategies).
enum class MigStrategy {
  kNone,    // whole GPUs as nvidia.com/gpu; MIG devices are not advertised
  kSingle,  // every GPU has MIG on with one profile: MIG devices as nvidia.com/gpu
  kMixed,   // MIG devices as nvidia.com/mig-<profile>, other GPUs as nvidia.com/gpu
};
std::string MigStrategyName(MigStrategy strategy);

// How Allocate tells the container runtime which devices a container gets (NVIDIA's
// flags.plugin.deviceListStrategy values).
enum class DeviceListStrategy {
  kEnvVar,          // NVIDIA_VISIBLE_DEVICES=<ids> (NVIDIA's container runtime reads it)
  kVolumeMounts,    // /dev/null mounted at /var/run/nvidia-container-devices/<id>
  kCdiAnnotations,  // cdi.k8s.io/<key> annotations (runtimes that ignore the CDI field)
  kCdiCri,          // the CRI's cdi_devices field
};

// gpuop's default (and its "cdi") is cdi-cri plus cdi-annotations: the CRI field for kubelets
// that send it, the annotations for older kubelets and runtimes that read only those
// (containerd skips a device named both ways; CDI removes a node or mount before adding it).
struct DeviceListStrategies {
  // In the configuration's order; empty means the default.
  std::vector<DeviceListStrategy> list;
  // gpuop's "both": CDI and the environment variable, CDI dropped while gpuop's CDI spec is not
  // on the node (the CDI component is off or has not written it yet).
  bool cdi_fallback = false;

  // `list`, or the default.
  std::vector<DeviceListStrategy> Strategies() const;
  bool Includes(DeviceListStrategy s) const;
  bool AnyCdi() const;
  bool AllCdi() const;
};

// What the container is told the devices are called (flags.plugin.deviceIDStrategy).
enum class DeviceIdStrategy {
  kUuid,   // GPU-..., MIG-...
  kIndex,  // "0", MIG "0:1" (GPU index : MIG device index)
};

// The devices of a resource a sharing rule replicates (NVIDIA's ReplicatedDevices): all of
// them, the first `count` (by GPU index), or those named in `list` (GPU index, MIG index
// "<gpu>:<mig>", GPU or MIG UUID; gpuop also takes a PCI address).
struct ReplicatedDevices {
  bool all = true;
  int count = 0;
  std::vector<std::string> list;
};

// One sharing rule: `replicas` shares of each selected device of `resource`.
struct SharingRule {
  std::string resource;  // fully qualified: "nvidia.com/gpu", "nvidia.com/mig-1g.10gb"
  // The name the shared devices are advertised under; empty: the resource itself, or
  // "<resource>.shared" under renameByDefault.
  std::string rename;
  ReplicatedDevices devices;
  int replicas = 1;
};

enum class SharingStrategy { kNone, kTimeSlicing, kMps };

// NVIDIA's default flags.mpsRoot: the host directory under which the MPS control daemons keep
// their per-resource pipe and log directories, the shared shm and the ready file.
inline constexpr char kDefaultMpsRoot[] = "/run/nvidia/mps";
// The most clients one MPS server takes (NVIDIA's limit: 48 from compute capability 7.5, which
// its daemon calls Volta, 16 before), so the most replicas of a GPU shared with MPS.
inline constexpr int kMpsMaxClients = 48;
int MpsMaxClients(int compute_major, int compute_minor);

// flags.gfd: read by the labels component.
struct GfdFlags {
  bool oneshot = false;
  bool no_timestamp = false;
  std::optional<absl::Duration> sleep_interval;
  std::string output_file;
  std::string machine_type_file;
};

// resources.gpus[] / resources.mig[]: GPUs whose product name (MIG devices whose profile)
// matches `pattern` (`*` any run of characters; unanchored, as NVIDIA matches) are advertised
// as `name`.
struct ResourcePattern {
  std::string pattern;
  std::string name;  // fully qualified
};

// The device plugin's configuration: NVIDIA's device plugin / GPU feature discovery config file
// (api/config/v1), so their ConfigMaps load unchanged. Every key of that schema is accepted;
// keys outside it are an error naming the key. Keys gpuop has no use for are listed in
// `not_acted_on` (the plugin warns once by name). docs/compatibility.md has the table.
//
// gpuop differences, all deliberate:
// - flags.plugin.deviceListStrategy defaults to cdi-cri + cdi-annotations (gpuop needs no NVIDIA
//   runtime); gpuop also takes "cdi" (the same two) and "both" (those and envvar, falling back
//   to envvar alone while its CDI spec is missing), and flags.deviceListStrategy as an older
//   spelling.
// - sharing rules' rename and devices, and resources.gpus / resources.mig, are acted on
//   (NVIDIA's plugin warns and ignores them); several rules may name the same resource with
//   disjoint devices, which gives GPUs different replica counts.
struct DevicePluginConfig {
  MigStrategy mig_strategy = MigStrategy::kNone;
  bool fail_on_init_error = true;
  std::string nvidia_driver_root;  // flags.nvidiaDriverRoot, host path ("" = auto)
  std::string nvidia_dev_root;     // flags.nvidiaDevRoot; "" = the driver root
  bool gds_enabled = false;
  bool mofed_enabled = false;
  bool gdrcopy_enabled = false;

  DeviceListStrategies device_list;
  DeviceIdStrategy device_id_strategy = DeviceIdStrategy::kUuid;
  bool pass_device_specs = false;
  std::string cdi_annotation_prefix = "cdi.k8s.io/";

  GfdFlags gfd;
  std::vector<ResourcePattern> gpu_resources;
  std::vector<ResourcePattern> mig_resources;

  // The section the sharing rules came from: sharing.mps makes kMps, sharing.timeSlicing
  // kTimeSlicing, each only when a rule has more than one replica (as NVIDIA decides).
  SharingStrategy sharing_strategy = SharingStrategy::kNone;
  bool mps = false;  // the rules are sharing.mps's (whatever their replicas)
  bool rename_by_default = false;
  // NVIDIA's default: false under time-slicing, true under MPS unless the file says otherwise.
  bool fail_requests_greater_than_one = false;
  std::vector<SharingRule> sharing;
  // flags.mpsRoot: host path.
  std::string mps_root = kDefaultMpsRoot;

  std::vector<int> imex_channel_ids;
  bool imex_required = false;

  // Schema keys set in the file that gpuop does not act on, each with the reason.
  std::vector<std::string> not_acted_on;

  bool Shared() const { return !sharing.empty(); }
  // "sharing.mps" or "sharing.timeSlicing": where errors about the rules point.
  std::string SharingField() const { return mps ? "sharing.mps" : "sharing.timeSlicing"; }
  // The name shared devices of `rule` are advertised under.
  std::string SharedName(const SharingRule& rule) const;
};

// NVIDIA's resource name rule: a name without '/' gets the nvidia.com/ prefix; the result is
// at most 63 characters and its name part a DNS subdomain. InvalidArgument otherwise.
[[nodiscard]] absl::StatusOr<std::string> QualifiedResourceName(absl::string_view name);

// Parses the YAML text. InvalidArgument names `source` (the file), the field and the problem:
// "config /etc/gpuop/plugin/a100: sharing.timeSlicing.resources[1].replicas: must be >= 1".
// An empty document is the default configuration.
[[nodiscard]] absl::StatusOr<DevicePluginConfig> ParseDevicePluginConfig(absl::string_view yaml,
                                                                         absl::string_view source);

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_DEVICEPLUGIN_CONFIG_H_
