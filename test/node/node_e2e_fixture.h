#ifndef GPUOP_TEST_NODE_NODE_E2E_FIXTURE_H_
#define GPUOP_TEST_NODE_NODE_E2E_FIXTURE_H_

// The node tier's shared pieces: the node, the API, what the earlier steps established, and the
// reads of pods and the Node that several steps use. The steps themselves are in
// node_e2e_test.cc, in the order they run.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "test/cluster/cluster_environment.h"
#include "test/cluster/test_api.h"

namespace gpuop::test {

inline constexpr char kNamespace[] = "gpuop-system";
inline constexpr char kWorkloads[] = "default";
inline constexpr char kProbePod[] = "gpu-probe";
inline constexpr char kGpuImage[] = "localhost/gpuop:0.1.0";
inline constexpr char kProbeImage[] = "localhost/gpu-probe:1";
inline constexpr char kDriverImage[] = "localhost/simulated/driver:570.86.15-debian12";
// The components the default policy enables, as DaemonSets gpuop-<name>.
inline const std::vector<std::string> kComponents = {
    "driver", "runtime", "cdi", "labels", "device-plugin", "health", "exporter", "validator"};

ControlPlane& Cluster();
// A tool the setup built (helm, kubectl), by name.
std::string Tool(const std::string& name);
// The environment for those tools: the cluster's kubeconfig.
std::vector<std::string> KubeEnv();

// What the earlier steps established; later steps need it.
struct State {
  bool images = false;
  bool installed = false;
  bool operator_running = false;
  bool node_found = false;
  bool components_ready = false;
  bool runtime_configured = false;
  bool allocatable = false;
  bool probe_running = false;
  bool upgraded = false;   // the driver upgrade step passed (and set podDeletion.force)
  bool mig_mixed = false;  // the simulated driver plays a100-8x-mig, device plugin strategy mixed
  std::map<std::string, std::string> containerd_before;  // /etc/containerd before the install
  std::map<std::string, std::string> cdi_before;         // /etc/cdi and /var/run/cdi
  absl::Time installed_at;
  std::optional<absl::Time> allocatable_at;  // when the Node first showed nvidia.com/gpu: 8
};
State& S();

// The node's /etc/cdi and /var/run/cdi, by path.
std::map<std::string, std::string> CdiSnapshot();

absl::StatusOr<TestApi>& Api();
absl::StatusOr<nlohmann::json> Get(const std::string& path);
// Every pod of `ns`.
absl::StatusOr<std::vector<nlohmann::json>> Pods(const std::string& ns);

// Waits until the Node is Ready with nvidia.com/gpu: 8 allocatable.
absl::Status AwaitAllocatable(absl::Duration timeout);
// The running pod the restart tests watch: the user's probe when it runs, else the operator.
absl::StatusOr<std::string> WatchedPodPath();
// The pod's first container status; an empty object while the kubelet reports none (a pod
// just created, or a status written while the runtime restarts).
nlohmann::json FirstContainerStatus(const nlohmann::json& pod);
// Waits until the pod at `path` runs the container `id` again, never restarted, and is Ready.
absl::Status AwaitSameContainer(const std::string& path, const std::string& id);
// The pods of gpuop's GPU clients on the node whose containers may still run: every component
// but the driver and the runtime, unless the kubelet reported the pod Succeeded or Failed (its
// containers stopped; a deleted pod stays listed a moment after that).
std::vector<std::string> ClientPods(const std::vector<nlohmann::json>& pods);
// The driver pod among `pods`, or null.
const nlohmann::json* DriverPod(const std::vector<nlohmann::json>& pods);

// Imports the images once for the suite (nothing is ever pulled) and skips every step when
// that failed.
class NodeE2ETest : public ::testing::Test {
 protected:
  static void SetUpTestSuite();
  void SetUp() override;
};

}  // namespace gpuop::test

#endif  // GPUOP_TEST_NODE_NODE_E2E_FIXTURE_H_
