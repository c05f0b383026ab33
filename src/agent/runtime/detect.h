#ifndef GPUOP_AGENT_RUNTIME_DETECT_H_
#define GPUOP_AGENT_RUNTIME_DETECT_H_

// Which container runtime a node runs, from what is on its filesystem.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/runtime/runtime.h"

namespace gpuop::agent::runtime {

struct Detection {
  // The runtime to configure; nullopt when there is none, or when the kubelet uses a runtime
  // endpoint gpuop does not configure (k3s's containerd, for example).
  std::optional<Runtime> runtime;
  // Every runtime with evidence on the node, in preference order (containerd, CRI-O, Docker).
  std::vector<Runtime> present;
  // What was found: "containerd: socket /run/containerd/containerd.sock".
  std::vector<std::string> evidence;
  // Why `runtime` was chosen, or why none was.
  std::string reason;
};

// Looks under `host_root` (where the host's root is mounted) for:
//  - the kubelet's container runtime endpoint (containerRuntimeEndpoint in
//    /var/lib/kubelet/config.yaml, or --container-runtime-endpoint in
//    /var/lib/kubelet/kubeadm-flags.env, /etc/default/kubelet, /etc/sysconfig/kubelet);
//  - sockets: /run/containerd/containerd.sock, /run/crio/crio.sock, /run/docker.sock (and their
//    /var/run spellings when var/run is not a link);
//  - configuration: /etc/containerd/config.toml, /etc/crio/, /etc/docker/daemon.json.
// The kubelet's endpoint decides when it is known (flags before config.yaml, as the kubelet
// ranks them). Otherwise a runtime with a socket beats one with only configuration files, and
// among equals containerd > CRI-O > Docker: containerd is the most common CRI runtime, and a
// Docker host runs a containerd too. Errors only for I/O failures other than a missing file.
[[nodiscard]] absl::StatusOr<Detection> DetectRuntime(const std::filesystem::path& host_root = "/");

}  // namespace gpuop::agent::runtime

#endif  // GPUOP_AGENT_RUNTIME_DETECT_H_
