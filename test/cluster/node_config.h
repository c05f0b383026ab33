#ifndef GPUOP_TEST_CLUSTER_NODE_CONFIG_H_
#define GPUOP_TEST_CLUSTER_NODE_CONFIG_H_

// The files of the real test node (profile `node`): where each lives on the machine and inside
// the node's mount namespace, and what containerd's and the kubelet's configurations say.
// Facts behind each setting: shared/reference/real-node.md.

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "test/cluster/pki.h"

namespace gpuop::test {

// The node's name. The kubelet registers as `localhost`, which resolves from /etc/hosts, so the
// API server (--kubelet-preferred-address-types=Hostname) reaches it on loopback and never
// through a DNS server or the machine's own interface address.
inline constexpr char kNodeName[] = "localhost";
// The sandbox (pause) image every pod starts with; built locally (scripts/image), never pulled.
inline constexpr char kPauseImage[] = "localhost/pause:3.10";

// Paths of one node. Inside the node's mount namespace the kubelet, containerd and every
// container see the paths a real node has (/var/lib/kubelet, /etc/containerd/config.toml,
// /run/containerd/containerd.sock, /etc/cdi, /run/nvidia, ...); each of them is a directory
// under the test's work dir on the machine, so a test reads and checks them there.
struct NodeLayout {
  explicit NodeLayout(const std::filesystem::path& work_dir);

  std::filesystem::path root;  // <work>/node
  // Directories mounted over the node paths, as (machine dir, node path).
  std::vector<std::pair<std::filesystem::path, std::string>> Binds() const;

  // On the machine.
  std::filesystem::path etc_containerd;      // -> /etc/containerd
  std::filesystem::path etc_cdi;             // -> /etc/cdi
  std::filesystem::path run;                 // -> /run (so /var/run/cdi, /run/nvidia, ...)
  std::filesystem::path var_lib_kubelet;     // -> /var/lib/kubelet
  std::filesystem::path var_lib_containerd;  // -> /var/lib/containerd
  std::filesystem::path var_lib_gpuop;       // -> /var/lib/gpuop
  std::filesystem::path usr_local_nvidia;    // -> /usr/local/nvidia
  std::filesystem::path cni_conf_dir;        // read by containerd at its machine path
  std::filesystem::path pod_logs;            // the kubelet's podLogsDir
  std::filesystem::path kubelet_pki;         // kubelet --cert-dir
  std::filesystem::path kubelet_config;      // KubeletConfiguration
  std::filesystem::path kubelet_kubeconfig;  // system:node:localhost
  std::filesystem::path resolv_conf;         // the kubelet's resolvConf: loopback only
  std::filesystem::path sandbox_ready;       // the sandbox's first PID, once mounted
  // The node's SIMULATED PCI bus (NodePciBus): a fake sysfs tree, and the tmpfs the sandbox
  // assembles the node's /sys/bus and /sys/devices on.
  std::filesystem::path fake_sysfs;
  std::filesystem::path sysfs_stage;
  // Mounted over the node's /proc/driver: the SIMULATED driver writes the kernel module's MIG
  // capability files there (test/fakes/driver/proc_entries.h). Under /run, so that the driver
  // container reaches it through its /run/nvidia volume (as /run/nvidia/simulated-proc-driver).
  std::filesystem::path proc_driver;
  static constexpr char kNodeProcDriver[] = "/run/nvidia/simulated-proc-driver";

  // The containerd socket as the machine reaches it, and as the node sees it.
  std::filesystem::path ContainerdSocket() const;
  static constexpr char kNodeContainerdSocket[] = "/run/containerd/containerd.sock";
  // Paths in the node of its main containerd config file (users' nodes keep it there too).
  static constexpr char kNodeContainerdConfig[] = "/etc/containerd/config.toml";
  std::filesystem::path ContainerdConfig() const { return etc_containerd / "config.toml"; }
};

struct NodeSettings {
  int kubelet_port = 0;
  int kubelet_healthz_port = 0;
  std::string api_server;   // https://127.0.0.1:<port>
  std::string runc;         // the runc binary
  std::string cni_bin_dir;  // where the CNI plugins (loopback) are
};

// containerd 2.x configuration (version 3): standard paths inside the node, CDI on, runc with
// its state under /run/containerd, restrict_oom_score_adj (this machine's processes lack
// CAP_SYS_RESOURCE), the locally built pause image pinned, and a loopback-only CNI.
std::string ContainerdConfigToml(const NodeSettings& settings, const NodeLayout& layout);

// A CNI network that creates no routable address: only the loopback plugin. containerd reports
// its network ready with it; every pod of the node tests uses hostNetwork.
std::string LoopbackCniConflist();

// KubeletConfiguration for cgroup v1 with the cgroupfs driver, on loopback ports, with
// authentication by client certificate (the API server's) and webhook authorization.
std::string KubeletConfigYaml(const NodeSettings& settings, const NodeLayout& layout,
                              const Pki& pki);

// Creates the node's directories and writes its configuration files: containerd's config, the
// CNI network, the kubelet's configuration, a kubeconfig with a client certificate for
// system:node:localhost in group system:nodes, and a resolv.conf.
[[nodiscard]] absl::Status WriteNodeFiles(const NodeSettings& settings, const NodeLayout& layout,
                                          const Pki& pki);

// True when something accepts connections on the unix socket at `path`.
bool UnixSocketAccepts(const std::filesystem::path& path);

}  // namespace gpuop::test

#endif  // GPUOP_TEST_CLUSTER_NODE_CONFIG_H_
