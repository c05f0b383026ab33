#include "test/cluster/control_plane.h"

#include <cstdlib>
#include <deque>
#include <fstream>
#include <sstream>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kube/transport/curl_http_client.h"
#include "test/cluster/interrupt_guard.h"
#include "test/cluster/kubeconfig.h"
#include "test/cluster/ports.h"

namespace gpuop::test {
namespace {

namespace fs = std::filesystem;

size_t Index(Component c) { return static_cast<size_t>(c); }

absl::StatusOr<std::string> ReadFile(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat("read ", path.string()));
  std::ostringstream out;
  out << file.rdbuf();
  return out.str();
}

std::string Tail(const fs::path& path, int lines) {
  std::ifstream file(path);
  std::deque<std::string> last;
  for (std::string line; std::getline(file, line);) {
    last.push_back(std::move(line));
    if (static_cast<int>(last.size()) > lines) last.pop_front();
  }
  std::string out;
  for (const auto& line : last) absl::StrAppend(&out, "    ", line, "\n");
  return out;
}

// The API server publishes (never binds) an address for the `kubernetes` Service. It must not be
// loopback and must be IPv4 like the service CIDR; take the first global IPv4 address, or a
// documentation address when the machine has none.
std::string AdvertiseAddress() {
  std::string found = "192.0.2.10";
  ifaddrs* addrs = nullptr;
  if (getifaddrs(&addrs) != 0) return found;
  for (ifaddrs* a = addrs; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    const uint32_t ip = ntohl(in->sin_addr.s_addr);
    if ((ip >> 24) == 127 || (ip >> 16) == 0xA9FE) continue;  // loopback, link-local
    char buf[INET_ADDRSTRLEN];
    if (inet_ntop(AF_INET, &in->sin_addr, buf, sizeof(buf)) != nullptr) {
      found = buf;
      break;
    }
  }
  freeifaddrs(addrs);
  return found;
}

absl::Status WriteText(const fs::path& path, const std::string& text) {
  std::ofstream file(path, std::ios::trunc);
  file << text;
  file.close();
  if (!file) return absl::InternalError(absl::StrCat("write ", path.string()));
  return absl::OkStatus();
}

std::string Url(int port, absl::string_view path, bool tls = true) {
  return absl::StrCat(tls ? "https" : "http", "://127.0.0.1:", port, path);
}

}  // namespace

absl::StatusOr<Profile> ParseProfile(absl::string_view name) {
  if (name == "apiserver") return Profile::kApiServer;
  if (name == "full") return Profile::kFull;
  if (name == "node") return Profile::kNode;
  return absl::InvalidArgumentError(
      absl::StrCat("profile \"", name, "\": must be \"apiserver\", \"full\" or \"node\""));
}

std::string ProfileName(Profile profile) {
  switch (profile) {
    case Profile::kApiServer:
      return "apiserver";
    case Profile::kFull:
      return "full";
    case Profile::kNode:
      return "node";
  }
  return "unknown";
}

std::string ComponentName(Component component) {
  switch (component) {
    case Component::kEtcd:
      return "etcd";
    case Component::kApiServer:
      return "kube-apiserver";
    case Component::kControllerManager:
      return "kube-controller-manager";
    case Component::kScheduler:
      return "kube-scheduler";
    case Component::kKwok:
      return "kwok";
    case Component::kNodeSandbox:
      return "node-sandbox";
    case Component::kContainerd:
      return "containerd";
    case Component::kKubelet:
      return "kubelet";
  }
  return "unknown";
}

fs::path DefaultBinDir() {
  if (const char* bin = std::getenv("GPUOP_CONTROL_PLANE_BIN"); bin != nullptr && *bin != '\0') {
    return bin;
  }
  fs::path cache;
  if (const char* c = std::getenv("GPUOP_CACHE"); c != nullptr && *c != '\0') {
    cache = c;
  } else {
    const char* home = std::getenv("HOME");
    cache = fs::path(home != nullptr ? home : "/root") / ".cache" / "gpuop";
  }
  return cache / "bin" / GPUOP_CONTROL_PLANE_KEY;
}

fs::path DefaultNodeBinDir() {
  if (const char* bin = std::getenv("GPUOP_NODE_BIN"); bin != nullptr && *bin != '\0') return bin;
  return DefaultBinDir().parent_path() / GPUOP_NODE_KEY;
}

fs::path DefaultImagesDir() {
  if (const char* dir = std::getenv("GPUOP_IMAGES_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  return GPUOP_BUILD_IMAGES_DIR;
}

absl::StatusOr<std::unique_ptr<ControlPlane>> ControlPlane::Start(ControlPlaneOptions options) {
  InterruptGuard::Install();
  if (options.bin_dir.empty()) options.bin_dir = DefaultBinDir();
  if (options.node_bin_dir.empty()) options.node_bin_dir = DefaultNodeBinDir();
  std::vector<fs::path> binaries;
  for (Component c : {Component::kEtcd, Component::kApiServer, Component::kControllerManager,
                      Component::kScheduler, Component::kKwok}) {
    binaries.push_back(options.bin_dir / ComponentName(c));
  }
  if (options.profile == Profile::kNode) {
    for (const char* b : {"kubelet", "containerd", "ctr", "containerd-shim-runc-v2"}) {
      binaries.push_back(options.node_bin_dir / b);
    }
  }
  for (const fs::path& binary : binaries) {
    if (!fs::exists(binary)) {
      return absl::FailedPreconditionError(
          absl::StrCat("control plane: ", binary.string(),
                       " is missing; run scripts/setup (or test/cluster/tools/build) to build it"));
    }
  }
  // A port picked as free can be taken by another process before the component binds it; a
  // fresh start on new ports resolves that. Other failures are reported at once.
  constexpr int kAttempts = 3;
  absl::Status last;
  for (int attempt = 1; attempt <= kAttempts; ++attempt) {
    std::unique_ptr<ControlPlane> cp(new ControlPlane(options));
    last = cp->Prepare();
    if (last.ok()) last = cp->StartAll();
    if (last.ok()) return cp;
    const std::string diagnostics = cp->Diagnostics();
    const bool port_clash = absl::StrContains(diagnostics, "address already in use");
    if (!port_clash || attempt == kAttempts) {
      cp->KeepWorkDir();
      (void)cp->Stop();
      return absl::Status(
          last.code(),
          absl::StrCat(last.message(), "\nwork dir: ", cp->work_dir().string(), "\n", diagnostics));
    }
    (void)cp->Stop();
  }
  return last;
}

ControlPlane::~ControlPlane() { (void)Stop(); }

absl::Status ControlPlane::Prepare() {
  if (options_.work_dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ =
        absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/gpuop-cluster-XXXXXX");
    if (mkdtemp(templ.data()) == nullptr) {
      return absl::ErrnoToStatus(errno, absl::StrCat("control plane: mkdtemp ", templ));
    }
    options_.work_dir = templ;
    owns_work_dir_ = true;
  }
  std::error_code ec;
  fs::create_directories(options_.work_dir / "logs", ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("control plane: mkdir ", options_.work_dir.string(), ": ", ec.message()));
  }
  GPUOP_ASSIGN_OR_RETURN(pki_, GeneratePki(options_.work_dir / "pki"));
  GPUOP_ASSIGN_OR_RETURN(std::vector<int> ports, PickFreeLoopbackPorts(7));
  ports_ = {.etcd_client = ports[0],
            .etcd_peer = ports[1],
            .apiserver = ports[2],
            .controller_manager = ports[3],
            .scheduler = ports[4],
            .kubelet = ports[5],
            .kubelet_healthz = ports[6]};
  node_layout_ = NodeLayout(options_.work_dir);
  server_ = Url(ports_.apiserver, "");
  advertise_address_ = AdvertiseAddress();
  kubeconfig_ = options_.work_dir / "admin.kubeconfig";
  GPUOP_RETURN_IF_ERROR(WriteKubeconfig(kubeconfig_, {.server = server_,
                                                      .ca_cert = pki_.ca_cert,
                                                      .client_cert = pki_.admin_cert,
                                                      .client_key = pki_.admin_key}));
  GPUOP_RETURN_IF_ERROR(WriteText(options_.work_dir / "scheduler.yaml",
                                  absl::StrCat("apiVersion: kubescheduler.config.k8s.io/v1\n"
                                               "kind: KubeSchedulerConfiguration\n"
                                               "clientConnection:\n"
                                               "  kubeconfig: \"",
                                               kubeconfig_.string(),
                                               "\"\n"
                                               "leaderElection:\n"
                                               "  leaderElect: false\n")));

  GPUOP_ASSIGN_OR_RETURN(std::string ca, ReadFile(pki_.ca_cert));
  GPUOP_ASSIGN_OR_RETURN(std::string cert, ReadFile(pki_.admin_cert));
  GPUOP_ASSIGN_OR_RETURN(std::string key, ReadFile(pki_.admin_key));
  GPUOP_ASSIGN_OR_RETURN(probe_,
                         kube::CurlHttpClient::Create(
                             {.tls = {.ca_pem = ca, .client_cert_pem = cert, .client_key_pem = key},
                              .user_agent = "gpuop-test-cluster",
                              .connect_timeout = absl::Seconds(2)}));
  if (options_.profile == Profile::kNode) GPUOP_RETURN_IF_ERROR(PrepareNode());
  return absl::OkStatus();
}

bool ControlPlane::InProfile(Component component) const {
  switch (component) {
    case Component::kEtcd:
    case Component::kApiServer:
      return true;
    case Component::kControllerManager:
    case Component::kScheduler:
    case Component::kKwok:
      return options_.profile != Profile::kApiServer;
    case Component::kNodeSandbox:
    case Component::kContainerd:
    case Component::kKubelet:
      return options_.profile == Profile::kNode;
  }
  return false;
}

absl::Status ControlPlane::StartAll() {
  for (Component c : kAllComponents) {
    if (!InProfile(c)) continue;
    GPUOP_RETURN_IF_ERROR(StartComponent(c));
    // Pods cannot start without the pause image, and nothing can be pulled here.
    if (c == Component::kContainerd) GPUOP_RETURN_IF_ERROR(ImportNodeImages());
  }
  return absl::OkStatus();
}

std::vector<std::string> ControlPlane::Argv(Component component) const {
  const fs::path bin = options_.bin_dir / ComponentName(component);
  const fs::path& work = options_.work_dir;
  const std::string kubeconfig = kubeconfig_.string();
  const std::string etcd = Url(ports_.etcd_client, "", /*tls=*/false);
  switch (component) {
    case Component::kEtcd: {
      const std::string peer = Url(ports_.etcd_peer, "", /*tls=*/false);
      return {bin,
              "--name=default",
              absl::StrCat("--data-dir=", (work / "etcd").string()),
              absl::StrCat("--listen-client-urls=", etcd),
              absl::StrCat("--advertise-client-urls=", etcd),
              absl::StrCat("--listen-peer-urls=", peer),
              absl::StrCat("--initial-advertise-peer-urls=", peer),
              absl::StrCat("--initial-cluster=default=", peer),
              "--unsafe-no-fsync=true",
              "--log-level=warn"};
    }
    case Component::kApiServer: {
      std::vector<std::string> argv = {
          bin,
          absl::StrCat("--etcd-servers=", etcd),
          "--bind-address=127.0.0.1",
          absl::StrCat("--secure-port=", ports_.apiserver),
          absl::StrCat("--advertise-address=", advertise_address_),
          absl::StrCat("--tls-cert-file=", pki_.serving_cert.string()),
          absl::StrCat("--tls-private-key-file=", pki_.serving_key.string()),
          absl::StrCat("--client-ca-file=", pki_.ca_cert.string()),
          "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
          absl::StrCat("--service-account-key-file=", pki_.service_account_pub.string()),
          absl::StrCat("--service-account-signing-key-file=", pki_.service_account_key.string()),
          "--service-cluster-ip-range=10.96.0.0/16",
          "--authorization-mode=Node,RBAC",
          "--allow-privileged=true",
          absl::StrCat("--cert-dir=", (work / "apiserver-certs").string()),
          "--v=1"};
      if (options_.profile == Profile::kNode) {
        // As in a real cluster: kubelets limited to their own Node and its pods.
        argv.push_back("--enable-admission-plugins=NodeRestriction");
        // The node is `localhost`: the API server reaches its kubelet on loopback, never through
        // a DNS server or the machine's interface address.
        argv.push_back("--kubelet-preferred-address-types=Hostname");
        argv.push_back(absl::StrCat("--kubelet-client-certificate=",
                                    (pki_.dir / "apiserver-kubelet-client.crt").string()));
        argv.push_back(absl::StrCat("--kubelet-client-key=",
                                    (pki_.dir / "apiserver-kubelet-client.key").string()));
      }
      return argv;
    }
    case Component::kControllerManager:
      return {
          bin,
          absl::StrCat("--kubeconfig=", kubeconfig),
          absl::StrCat("--authentication-kubeconfig=", kubeconfig),
          absl::StrCat("--authorization-kubeconfig=", kubeconfig),
          "--bind-address=127.0.0.1",
          absl::StrCat("--secure-port=", ports_.controller_manager),
          absl::StrCat("--tls-cert-file=", pki_.serving_cert.string()),
          absl::StrCat("--tls-private-key-file=", pki_.serving_key.string()),
          "--leader-elect=false",
          "--controllers=*",
          "--use-service-account-credentials=true",
          absl::StrCat("--service-account-private-key-file=", pki_.service_account_key.string()),
          absl::StrCat("--root-ca-file=", pki_.ca_cert.string()),
          "--node-monitor-period=5s",
          "--node-monitor-grace-period=40s",
          "--v=1"};
    case Component::kScheduler:
      return {bin,
              absl::StrCat("--config=", (work / "scheduler.yaml").string()),
              absl::StrCat("--authentication-kubeconfig=", kubeconfig),
              absl::StrCat("--authorization-kubeconfig=", kubeconfig),
              "--bind-address=127.0.0.1",
              absl::StrCat("--secure-port=", ports_.scheduler),
              absl::StrCat("--tls-cert-file=", pki_.serving_cert.string()),
              absl::StrCat("--tls-private-key-file=", pki_.serving_key.string()),
              "--v=1"};
    case Component::kKwok: {
      const fs::path stages = options_.bin_dir / "kwok-stages";
      return {bin,
              absl::StrCat("--kubeconfig=", kubeconfig),
              "-c",
              (stages / "node/fast/node-initialize.yaml").string(),
              "-c",
              (stages / "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml").string(),
              "-c",
              (stages / "pod/fast/pod-ready.yaml").string(),
              "-c",
              (stages / "pod/fast/pod-complete.yaml").string(),
              "-c",
              (stages / "pod/fast/pod-delete.yaml").string(),
              "--manage-all-nodes=false",
              "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
              "--node-lease-duration-seconds=40",
              "--cidr=10.244.0.0/16"};
    }
    case Component::kNodeSandbox: {
      std::vector<std::string> argv = {GPUOP_NODE_SANDBOX, "init", "--ready-file",
                                       node_layout_.sandbox_ready.string(), "--private-dev"};
      if (options_.node_pci_bus != NodePciBus::kMachine) {
        argv.push_back("--pci-bus");
        argv.push_back(
            absl::StrCat(node_layout_.fake_sysfs.string(), "=", node_layout_.sysfs_stage.string()));
      }
      for (const auto& [dir, node_path] : node_layout_.Binds()) {
        argv.push_back("--bind");
        argv.push_back(absl::StrCat(dir.string(), "=", node_path));
      }
      argv.push_back("--proc-driver");
      argv.push_back(node_layout_.proc_driver.string());
      return argv;
    }
    case Component::kContainerd:
      return {GPUOP_NODE_SANDBOX,
              "exec",
              "--init-pid",
              absl::StrCat(node_init_pid_),
              "--restart-always",
              "--",
              (options_.node_bin_dir / "containerd").string(),
              "--config",
              NodeLayout::kNodeContainerdConfig,
              "--log-level=info"};
    case Component::kKubelet:
      return {GPUOP_NODE_SANDBOX,
              "exec",
              "--init-pid",
              absl::StrCat(node_init_pid_),
              "--",
              (options_.node_bin_dir / "kubelet").string(),
              absl::StrCat("--config=", node_layout_.kubelet_config.string()),
              absl::StrCat("--kubeconfig=", node_layout_.kubelet_kubeconfig.string()),
              absl::StrCat("--hostname-override=", kNodeName),
              "--root-dir=/var/lib/kubelet",
              absl::StrCat("--cert-dir=", node_layout_.kubelet_pki.string()),
              "--v=2"};
  }
  return {};
}

fs::path ControlPlane::LogPath(Component component) const {
  return options_.work_dir / "logs" / absl::StrCat(ComponentName(component), ".log");
}

absl::Status ControlPlane::StartComponent(Component component) {
  if (!InProfile(component)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "start ", ComponentName(component), ": not part of profile ", ProfileName(profile())));
  }
  if (IsRunning(component)) return absl::OkStatus();
  std::vector<std::string> env;
  // kwok would otherwise also load ~/.kwok/kwok.yaml.
  if (component == Component::kKwok) {
    env.push_back(absl::StrCat("KWOK_WORKDIR=", (options_.work_dir / "kwok").string()));
  }
  // containerd finds its shim (containerd-shim-runc-v2) on PATH.
  if (component == Component::kContainerd || component == Component::kKubelet) {
    env.push_back(absl::StrCat("PATH=", options_.node_bin_dir.string(),
                               ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"));
  }
  if (component == Component::kNodeSandbox) {
    std::error_code ec;
    fs::remove(node_layout_.sandbox_ready, ec);
  }
  GPUOP_ASSIGN_OR_RETURN(common::Subprocess process,
                         common::Subprocess::Spawn({.argv = Argv(component),
                                                    .env = std::move(env),
                                                    .output_path = LogPath(component),
                                                    .working_dir = options_.work_dir}));
  InterruptGuard::Track(process.pid(), static_cast<int>(Index(component)));
  processes_[Index(component)] = std::move(process);
  stopped_ = false;
  return WaitReady(component);
}

bool ControlPlane::IsRunning(Component component) {
  auto& process = processes_[Index(component)];
  return process.has_value() && process->Running();
}

absl::Status ControlPlane::StopComponent(Component component, std::optional<absl::Duration> grace) {
  auto& process = processes_[Index(component)];
  if (!process.has_value()) return absl::OkStatus();
  const pid_t pid = process->pid();
  absl::Status status = process->Stop(grace.value_or(options_.stop_grace));
  InterruptGuard::Untrack(pid);
  process.reset();
  return status;
}

absl::Status ControlPlane::Stop() {
  if (stopped_) return absl::OkStatus();
  stopped_ = true;
  absl::Status status;
  for (auto it = kAllComponents.rbegin(); it != kAllComponents.rend(); ++it) {
    status.Update(StopComponent(*it));
  }
  if (options_.profile == Profile::kNode) CleanUpNodeCgroups();
  probe_.reset();
  if (owns_work_dir_ && !keep_work_dir_ && !options_.work_dir.empty()) {
    std::error_code ec;
    fs::remove_all(options_.work_dir, ec);
  }
  return status;
}

absl::Status ControlPlane::GetOk(const std::string& url) {
  GPUOP_ASSIGN_OR_RETURN(kube::HttpResponse response,
                         probe_->Send({.url = url, .timeout = absl::Seconds(5)}));
  if (response.status != 200) {
    return absl::UnavailableError(absl::StrCat("GET ", url, ": HTTP ", response.status));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> ControlPlane::ProbeReady(Component component) {
  switch (component) {
    case Component::kEtcd:
      return GetOk(Url(ports_.etcd_client, "/readyz", /*tls=*/false)).ok();
    case Component::kApiServer:
      return GetOk(Url(ports_.apiserver, "/readyz")).ok();
    case Component::kControllerManager:
      // Healthy is not enough: tests need the controllers running, and the service-account
      // controller creating "default" in namespace default shows they are.
      return GetOk(Url(ports_.controller_manager, "/healthz")).ok() &&
             GetOk(Url(ports_.apiserver, "/api/v1/namespaces/default/serviceaccounts/default"))
                 .ok();
    case Component::kScheduler:
      return GetOk(Url(ports_.scheduler, "/readyz")).ok();
    case Component::kKwok: {
      // kwok serves nothing; it logs this line once its node informer is running.
      absl::StatusOr<std::string> log = ReadFile(LogPath(component));
      return log.ok() && absl::StrContains(*log, "Watch nodes");
    }
    case Component::kNodeSandbox: {
      // The sandbox writes its namespace's first PID once everything is mounted.
      absl::StatusOr<std::string> pid = ReadFile(node_layout_.sandbox_ready);
      if (!pid.ok() || pid->empty()) return false;
      node_init_pid_ = static_cast<pid_t>(std::strtol(pid->c_str(), nullptr, 10));
      return node_init_pid_ > 0;
    }
    case Component::kContainerd:
      return UnixSocketAccepts(node_layout_.ContainerdSocket());
    case Component::kKubelet:
      if (!GetOk(Url(ports_.kubelet_healthz, "/healthz", /*tls=*/false)).ok()) return false;
      return NodeReady();
  }
  return false;
}

absl::Status ControlPlane::WaitReady(Component component) {
  const absl::Time deadline = absl::Now() + options_.ready_timeout;
  auto& process = processes_[Index(component)];
  while (true) {
    if (!process->Running()) {
      return absl::FailedPreconditionError(
          absl::StrCat(ComponentName(component), " ", process->DescribeExit(),
                       " before it became ready; see ", LogPath(component).string()));
    }
    GPUOP_ASSIGN_OR_RETURN(bool ready, ProbeReady(component));
    if (ready) return absl::OkStatus();
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(ComponentName(component), " not ready after ",
                                                      absl::FormatDuration(options_.ready_timeout),
                                                      "; see ", LogPath(component).string()));
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
}

std::string ControlPlane::Diagnostics(int lines_per_log) const {
  std::string out;
  for (Component c : kAllComponents) {
    const fs::path log = LogPath(c);
    if (!fs::exists(log)) continue;
    absl::StrAppend(&out, "--- last lines of ", log.string(), "\n", Tail(log, lines_per_log));
  }
  return out;
}

}  // namespace gpuop::test
