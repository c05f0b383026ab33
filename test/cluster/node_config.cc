#include "test/cluster/node_config.h"

#include <fstream>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/status_macros.h"
#include "test/cluster/kubeconfig.h"

namespace gpuop::test {
namespace {

namespace fs = std::filesystem;

absl::Status Write(const fs::path& path, const std::string& text) {
  std::ofstream file(path, std::ios::trunc);
  file << text;
  file.close();
  if (!file) return absl::InternalError(absl::StrCat("node: write ", path.string()));
  return absl::OkStatus();
}

}  // namespace

NodeLayout::NodeLayout(const fs::path& work_dir)
    : root(work_dir / "node"),
      etc_containerd(root / "etc-containerd"),
      etc_cdi(root / "etc-cdi"),
      run(root / "run"),
      var_lib_kubelet(root / "var-lib-kubelet"),
      var_lib_containerd(root / "var-lib-containerd"),
      var_lib_gpuop(root / "var-lib-gpuop"),
      usr_local_nvidia(root / "usr-local-nvidia"),
      cni_conf_dir(root / "cni"),
      pod_logs(root / "pod-logs"),
      kubelet_pki(root / "kubelet-pki"),
      kubelet_config(root / "kubelet.yaml"),
      kubelet_kubeconfig(root / "kubelet.kubeconfig"),
      resolv_conf(root / "resolv.conf"),
      sandbox_ready(root / "sandbox.pid"),
      fake_sysfs(root / "sysfs"),
      sysfs_stage(root / "sysfs-stage"),
      proc_driver(run / "nvidia" / "simulated-proc-driver") {}

std::vector<std::pair<fs::path, std::string>> NodeLayout::Binds() const {
  return {{etc_containerd, "/etc/containerd"},
          {etc_cdi, "/etc/cdi"},
          {run, "/run"},
          {var_lib_kubelet, "/var/lib/kubelet"},
          {var_lib_containerd, "/var/lib/containerd"},
          {var_lib_gpuop, "/var/lib/gpuop"},
          {usr_local_nvidia, "/usr/local/nvidia"}};
}

fs::path NodeLayout::ContainerdSocket() const { return run / "containerd" / "containerd.sock"; }

std::string ContainerdConfigToml(const NodeSettings& settings, const NodeLayout& layout) {
  // Paths are the node's own (see NodeLayout); the CNI directory is the machine's path, which the
  // node sees unchanged.
  std::string toml = R"(# containerd of the gpuop test node (test/cluster/node_config.cc).
version = 3
root = '/var/lib/containerd'
state = '/run/containerd'

[grpc]
  address = '/run/containerd/containerd.sock'

[ttrpc]
  address = '/run/containerd/containerd.sock.ttrpc'

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'

    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = '@PAUSE@'

  [plugins.'io.containerd.cri.v1.runtime']
    enable_cdi = true
    cdi_spec_dirs = ['/etc/cdi', '/var/run/cdi']
    # The machine's processes lack CAP_SYS_RESOURCE: runc cannot lower oom_score_adj.
    restrict_oom_score_adj = true

    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'

      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'

        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = '@RUNC@'
          Root = '/run/containerd/runc'
          SystemdCgroup = false

    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ['@CNI_BIN@']
      conf_dir = '@CNI_CONF@'

  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = '127.0.0.1'
    stream_server_port = '0'
)";
  return absl::StrReplaceAll(toml, {{"@PAUSE@", kPauseImage},
                                    {"@RUNC@", settings.runc},
                                    {"@CNI_BIN@", settings.cni_bin_dir},
                                    {"@CNI_CONF@", layout.cni_conf_dir.string()}});
}

std::string LoopbackCniConflist() {
  return R"({"cniVersion": "1.0.0", "name": "gpuop-loopback-only", "plugins": [{"type": "loopback"}]})"
         "\n";
}

std::string KubeletConfigYaml(const NodeSettings& settings, const NodeLayout& layout,
                              const Pki& pki) {
  std::string yaml = R"(apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# The machine has cgroup v1 only.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
containerRuntimeEndpoint: unix://@SOCKET@
# Loopback only.
address: 127.0.0.1
port: @PORT@
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: @HEALTHZ@
resolvConf: @RESOLV@
podLogsDir: @LOGS@
# The machine's disk may be fuller than the default thresholds, and images can never be pulled
# again here: no eviction, no image garbage collection.
evictionHard: {}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
localStorageCapacityIsolation: false
serializeImagePulls: false
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: @CA@
authorization:
  mode: Webhook
)";
  return absl::StrReplaceAll(yaml, {{"@SOCKET@", NodeLayout::kNodeContainerdSocket},
                                    {"@PORT@", absl::StrCat(settings.kubelet_port)},
                                    {"@HEALTHZ@", absl::StrCat(settings.kubelet_healthz_port)},
                                    {"@RESOLV@", layout.resolv_conf.string()},
                                    {"@LOGS@", layout.pod_logs.string()},
                                    {"@CA@", pki.ca_cert.string()}});
}

absl::Status WriteNodeFiles(const NodeSettings& settings, const NodeLayout& layout,
                            const Pki& pki) {
  std::error_code ec;
  for (const fs::path& dir :
       {layout.root, layout.cni_conf_dir, layout.pod_logs, layout.kubelet_pki}) {
    fs::create_directories(dir, ec);
    if (ec)
      return absl::InternalError(absl::StrCat("node: mkdir ", dir.string(), ": ", ec.message()));
  }
  for (const auto& [dir, node_path] : layout.Binds()) {
    fs::create_directories(dir, ec);
    if (ec)
      return absl::InternalError(absl::StrCat("node: mkdir ", dir.string(), ": ", ec.message()));
  }
  GPUOP_RETURN_IF_ERROR(Write(layout.ContainerdConfig(), ContainerdConfigToml(settings, layout)));
  GPUOP_RETURN_IF_ERROR(Write(layout.cni_conf_dir / "10-loopback.conflist", LoopbackCniConflist()));
  GPUOP_RETURN_IF_ERROR(Write(layout.kubelet_config, KubeletConfigYaml(settings, layout, pki)));
  // A pod that looks a name up asks loopback, where nothing answers: never a DNS server.
  GPUOP_RETURN_IF_ERROR(Write(layout.resolv_conf, "nameserver 127.0.0.1\n"));
  GPUOP_ASSIGN_OR_RETURN(
      fs::path cert, IssueClientCert(pki, absl::StrCat("system:node:", kNodeName), "system:nodes",
                                     "node-localhost"));
  fs::path key = cert;
  key.replace_extension(".key");
  return WriteKubeconfig(layout.kubelet_kubeconfig, {.server = settings.api_server,
                                                     .ca_cert = pki.ca_cert,
                                                     .client_cert = cert,
                                                     .client_key = key,
                                                     .context_name = "gpuop-test-node"});
}

bool UnixSocketAccepts(const fs::path& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string p = path.string();
  if (p.size() >= sizeof(addr.sun_path)) return false;
  p.copy(addr.sun_path, p.size());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool ok = connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

}  // namespace gpuop::test
