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
#include "test/cluster/pki.h"

namespace gpuop::test {

// Which processes a control plane runs.
enum class Profile {
  kApiServer,  // etcd + kube-apiserver: for integration tests of API clients.
  kFull,       // + kube-controller-manager, kube-scheduler and kwok: workloads get scheduled and
               //   simulated nodes run their pods.
};

[[nodiscard]] absl::StatusOr<Profile> ParseProfile(absl::string_view name);
std::string ProfileName(Profile profile);

// The processes, in start order.
enum class Component { kEtcd, kApiServer, kControllerManager, kScheduler, kKwok };
inline constexpr std::array<Component, 5> kAllComponents = {
    Component::kEtcd, Component::kApiServer, Component::kControllerManager, Component::kScheduler,
    Component::kKwok};

std::string ComponentName(Component component);

// The directory holding the control plane binaries: $GPUOP_CONTROL_PLANE_BIN when set, otherwise
// the cache that test/cluster/tools/build fills ($GPUOP_CACHE or ~/.cache/gpuop, then
// bin/<versions key>).
std::filesystem::path DefaultBinDir();

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

 private:
  struct Ports {
    int etcd_client = 0;
    int etcd_peer = 0;
    int apiserver = 0;
    int controller_manager = 0;
    int scheduler = 0;
  };

  explicit ControlPlane(ControlPlaneOptions options) : options_(std::move(options)) {}

  absl::Status Prepare();
  absl::Status StartAll();
  bool InProfile(Component component) const;
  std::vector<std::string> Argv(Component component) const;
  absl::Status WaitReady(Component component);
  absl::StatusOr<bool> ProbeReady(Component component);
  absl::Status GetOk(const std::string& url);

  ControlPlaneOptions options_;
  bool owns_work_dir_ = false;
  bool keep_work_dir_ = false;
  bool stopped_ = false;
  Ports ports_;
  Pki pki_;
  std::string server_;
  std::string advertise_address_;
  std::filesystem::path kubeconfig_;
  std::unique_ptr<kube::HttpClient> probe_;
  std::array<std::optional<common::Subprocess>, kAllComponents.size()> processes_;
};

}  // namespace gpuop::test

#endif  // GPUOP_TEST_CLUSTER_CONTROL_PLANE_H_
