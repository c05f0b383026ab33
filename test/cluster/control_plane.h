#ifndef GPUOP_TEST_CLUSTER_CONTROL_PLANE_H_
#define GPUOP_TEST_CLUSTER_CONTROL_PLANE_H_

#include <array>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/process.h"
#include "kube/transport/http_client.h"
#include "test/cluster/node_config.h"
#include "test/cluster/pki.h"

namespace gpuop::test {

// Which processes a control plane runs.
enum class Profile {
  kApiServer,  // etcd + kube-apiserver: for integration tests of API clients.
  kFull,       // + kube-controller-manager, kube-scheduler and kwok: workloads get scheduled and
               //   simulated nodes run their pods.
  kNode,       // + one real node, `localhost`: containerd and a kubelet (node_config.h) in
               //   namespaces of their own (gpuop-node-sandbox), running pods through runc.
};

[[nodiscard]] absl::StatusOr<Profile> ParseProfile(absl::string_view name);
std::string ProfileName(Profile profile);

// The processes, in start order.
enum class Component {
  kEtcd,
  kApiServer,
  kControllerManager,
  kScheduler,
  kKwok,
  kNodeSandbox,  // holds the node's mount and PID namespaces; everything in them ends with it
  kContainerd,
  kKubelet,
};
inline constexpr std::array<Component, 8> kAllComponents = {
    Component::kEtcd, Component::kApiServer,   Component::kControllerManager, Component::kScheduler,
    Component::kKwok, Component::kNodeSandbox, Component::kContainerd,        Component::kKubelet};

std::string ComponentName(Component component);

// The directory holding the control plane binaries: $GPUOP_CONTROL_PLANE_BIN when set, otherwise
// the cache that test/cluster/tools/build fills ($GPUOP_CACHE or ~/.cache/gpuop, then
// bin/<versions key>).
std::filesystem::path DefaultBinDir();
// The directory holding the node binaries (kubelet, containerd, ctr, containerd-shim-runc-v2,
// crictl): $GPUOP_NODE_BIN when set, otherwise the cache (bin/<node versions key>).
std::filesystem::path DefaultNodeBinDir();
// Where the build put the images (scripts/image): $GPUOP_IMAGES_DIR, else the build's images/.
std::filesystem::path DefaultImagesDir();

// An OCI image archive to import into the node's containerd (namespace k8s.io) as `ref`.
struct NodeImage {
  std::filesystem::path archive;
  std::string ref;  // "localhost/gpuop:0.1.0"
};

// The PCI bus the real node's /sys shows (profile kNode).
enum class NodePciBus {
  kMachine,  // the machine's own
  // SIMULATED: an HGX H100 board as test/fakes/sysfs's NvidiaHgxNode writes it (8 GPUs at the
  // bus ids of the fake NVML scenario h100-8x-nvswitch, 4 NVSwitches, a NIC, the BMC's display),
  // its GPUs unbound as before a driver is installed. The machine's other PCI devices are
  // hidden from the node.
  kHgxH100,
};

struct ControlPlaneOptions {
  Profile profile = Profile::kApiServer;
  // Where etcd, kube-apiserver, ... and kwok-stages/ are; DefaultBinDir() when empty.
  std::filesystem::path bin_dir;
  // State (PKI, etcd data, logs, kubeconfig) goes here; a fresh directory under $TMPDIR when
  // empty. Removed by Stop() unless KeepWorkDir() was called.
  std::filesystem::path work_dir;
  // How long each component may take to become ready.
  absl::Duration ready_timeout = absl::Seconds(120);
  // How long a component may take to exit after SIGTERM before it is killed.
  absl::Duration stop_grace = absl::Seconds(10);
  // Profile kNode: where kubelet, containerd, ... are (DefaultNodeBinDir() when empty), and the
  // images imported before the kubelet starts. The pause image (kPauseImage) is imported from
  // DefaultImagesDir()/pause.tar unless listed here.
  std::filesystem::path node_bin_dir;
  std::vector<NodeImage> node_images;
  NodePciBus node_pci_bus = NodePciBus::kHgxH100;
};

// A real Kubernetes control plane on free loopback ports, with its own PKI, for tests.
//
// Start() launches the profile's components in order and waits until each is ready; the
// destructor (or Stop()) stops them in reverse order by PID. Children are killed by the kernel
// if the test process dies, and stopped in order if it is interrupted (see InterruptGuard), so no
// process outlives the run. Components must be started from a thread that outlives them
// (normally the main thread).
//
// Not thread-safe: one owner (a test environment) drives it.
class ControlPlane {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ControlPlane>> Start(
      ControlPlaneOptions options);

  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;
  ~ControlPlane();

  // Stops every running component in reverse start order, then removes the work directory
  // unless it is kept. Idempotent.
  [[nodiscard]] absl::Status Stop();

  // Stops one component (for tests of clients that must survive an API server restart): SIGTERM,
  // then SIGKILL after `grace` (the options' stop_grace when not given).
  [[nodiscard]] absl::Status StopComponent(Component component,
                                           std::optional<absl::Duration> grace = std::nullopt);
  // Starts a stopped component again, with the same ports and data, and waits until it is ready.
  [[nodiscard]] absl::Status StartComponent(Component component);
  bool IsRunning(Component component);

  // Keeps the work directory (logs, data) after Stop(), for a person to read.
  void KeepWorkDir() { keep_work_dir_ = true; }

  Profile profile() const { return options_.profile; }
  // "https://127.0.0.1:<port>"
  const std::string& server() const { return server_; }
  // A kubeconfig for the admin user (group system:masters).
  const std::filesystem::path& kubeconfig() const { return kubeconfig_; }
  const Pki& pki() const { return pki_; }
  const std::filesystem::path& work_dir() const { return options_.work_dir; }
  std::filesystem::path LogPath(Component component) const;

  // The last lines of every component's log, for failure messages.
  std::string Diagnostics(int lines_per_log = 25) const;

  // Profile kNode. The node's files on the machine (node_config.h).
  const NodeLayout& node() const { return node_layout_; }
  // Imports an OCI archive into the node's containerd (namespace k8s.io) with ctr.
  [[nodiscard]] absl::Status ImportImage(const NodeImage& image);
  // Runs a program inside the node's namespaces to completion (for a test's `ctr`, `crictl`,
  // or reading what the node sees) and returns its exit status and output.
  struct RunResult {
    int exit_code = -1;
    std::string output;
  };
  [[nodiscard]] absl::StatusOr<RunResult> RunInNode(std::vector<std::string> argv,
                                                    absl::Duration timeout = absl::Seconds(60));
  // A path as the node sees it (mounts made inside the node, such as a driver container's
  // published root, are invisible from the machine): /proc/<node's first PID>/root/<path>.
  std::filesystem::path NodeView(const std::filesystem::path& node_path) const;
  // Starts a program inside the node's namespaces and returns it running, its output appended to
  // `log` (a new file under the work dir's logs/ when empty); the caller stops it.
  [[nodiscard]] absl::StatusOr<common::Subprocess> StartInNode(std::vector<std::string> argv,
                                                               std::filesystem::path log = {});
  const std::filesystem::path& node_bin_dir() const { return options_.node_bin_dir; }
  // Where etcd, kube-apiserver, kubectl and helm are.
  const std::filesystem::path& bin_dir() const { return options_.bin_dir; }

 private:
  struct Ports {
    int etcd_client = 0;
    int etcd_peer = 0;
    int apiserver = 0;
    int controller_manager = 0;
    int scheduler = 0;
    int kubelet = 0;
    int kubelet_healthz = 0;
  };

  explicit ControlPlane(ControlPlaneOptions options)
      : options_(std::move(options)), node_layout_(options_.work_dir) {}

  absl::Status Prepare();
  absl::Status StartAll();
  bool InProfile(Component component) const;
  std::vector<std::string> Argv(Component component) const;
  absl::Status WaitReady(Component component);
  absl::StatusOr<bool> ProbeReady(Component component);
  absl::Status GetOk(const std::string& url);
  absl::StatusOr<bool> NodeReady();
  absl::Status PrepareNode();
  absl::Status ImportNodeImages();
  void CleanUpNodeCgroups();

  ControlPlaneOptions options_;
  bool owns_work_dir_ = false;
  bool keep_work_dir_ = false;
  bool stopped_ = false;
  Ports ports_;
  Pki pki_;
  std::string server_;
  std::string advertise_address_;
  std::filesystem::path kubeconfig_;
  NodeLayout node_layout_;
  pid_t node_init_pid_ = 0;
  std::unique_ptr<kube::HttpClient> probe_;
  std::array<std::optional<common::Subprocess>, kAllComponents.size()> processes_;
};

}  // namespace gpuop::test

#endif  // GPUOP_TEST_CLUSTER_CONTROL_PLANE_H_
