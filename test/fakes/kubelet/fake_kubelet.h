#ifndef GPUOP_TEST_FAKES_KUBELET_FAKE_KUBELET_H_
#define GPUOP_TEST_FAKES_KUBELET_FAKE_KUBELET_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "kube/client/client.h"
#include "proto/deviceplugin/v1beta1/api.pb.h"

namespace grpc {
class Server;
class Status;
}  // namespace grpc

// The kubelet's side of the device plugin API, for tests of device plugins: a registration
// server on <dir>/kubelet.sock, a client of each registered plugin (ListAndWatch, Allocate,
// GetPreferredAllocation, PreStartContainer) and the PodResources v1 server, all real gRPC on
// unix sockets. README.md beside this file explains how it maps to the real kubelet.
namespace gpuop::fakes {

inline constexpr char kKubeletSocketName[] = "kubelet.sock";
inline constexpr char kKubeletCheckpointName[] = "kubelet_internal_checkpoint";
inline constexpr char kDeviceHealthy[] = "Healthy";
inline constexpr char kDeviceUnhealthy[] = "Unhealthy";

struct FakeKubeletOptions {
  // Stands for /var/lib/kubelet/device-plugins; created when missing. Socket paths are limited
  // to 107 bytes, so keep it short (a directory under /tmp).
  std::filesystem::path device_plugin_dir;
  // Stands for /var/lib/kubelet/pod-resources/kubelet.sock; its directory is created when
  // missing. Empty: no PodResources server. Must not lie in device_plugin_dir, whose sockets a
  // (re)start deletes.
  std::filesystem::path pod_resources_socket;
  // With both set, every change of a resource's device counts is written to the Node's
  // status.capacity and status.allocatable (merge patch on the status subresource), as the
  // kubelet does. The client must outlive the FakeKubelet.
  std::string node_name;
  kube::Client* kube_client = nullptr;
  // Deadlines of the Wait* queries. gRPC deadlines always use real time.
  const common::Clock* clock = &common::Clock::Real();
  // Limit of the synchronous dial plus GetDevicePluginOptions inside Register (kubelet: 10 s).
  absl::Duration dial_timeout = absl::Seconds(10);
  // Limit of Allocate and GetPreferredAllocation calls to a plugin.
  absl::Duration call_timeout = absl::Seconds(30);
  // Limit of PreStartContainer calls (kubelet: 30 s).
  absl::Duration pre_start_timeout = absl::Seconds(30);
};

// One device of a resource as the kubelet last saw it.
struct KubeletDevice {
  std::string id;
  // Reported "Healthy" in the latest ListAndWatch message, and that stream has not ended since.
  bool healthy = false;
  // Device.topology.nodes[].ID; empty when the plugin left topology unset.
  std::vector<int64_t> numa_nodes;

  friend bool operator==(const KubeletDevice&, const KubeletDevice&) = default;
};

// What the kubelet knows of one extended resource. A resource stays known once registered,
// through stream ends and restarts, as the kubelet's checkpoint keeps it.
struct KubeletResource {
  std::string name;
  // Socket file name of the latest successful registration.
  std::string endpoint;
  // The plugin's answer to GetDevicePluginOptions (what the kubelet acts on) and the copy in
  // its RegisterRequest.
  v1beta1::DevicePluginOptions options;
  v1beta1::DevicePluginOptions registered_options;
  // Registered since the kubelet (re)started and the ListAndWatch stream has not ended.
  bool connected = false;
  // The latest complete list, in the plugin's order. Emptied by a kubelet restart.
  std::vector<KubeletDevice> devices;
  int64_t capacity = 0;     // healthy + unhealthy
  int64_t allocatable = 0;  // healthy
  int64_t registrations = 0;
  int64_t list_and_watch_messages = 0;  // over all registrations
  // Times the kubelet disconnected the current registration because one of the resource's
  // ListAndWatch streams ended, that of a replaced registration included.
  int64_t stream_ends = 0;
};

// A pod's container asking for `count` devices of `resource`.
struct PodDeviceRequest {
  std::string pod_namespace;
  std::string pod_name;
  std::string container;
  std::string resource;
  int count = 1;
};

struct PodAllocation {
  std::vector<std::string> device_ids;
  // container_responses[0] of the plugin's AllocateResponse.
  v1beta1::ContainerAllocateResponse response;
};

// Thread-safe. Every method may be called from any thread, except that no call may be in
// progress when the object is destroyed. Destruction stops it (see Stop()).
class FakeKubelet {
 public:
  explicit FakeKubelet(FakeKubeletOptions options);
  ~FakeKubelet();
  FakeKubelet(const FakeKubelet&) = delete;
  FakeKubelet& operator=(const FakeKubelet&) = delete;

  // Starts as the kubelet does: creates the directories, deletes every socket in the device
  // plugin directory (a plugin started earlier must notice and re-register), creates the
  // checkpoint file when missing, then serves Registration on kubelet.sock and PodResources
  // on its socket. FailedPrecondition when running; InvalidArgument for bad options;
  // Internal/Unavailable when a directory or server cannot be set up.
  [[nodiscard]] absl::Status Start();

  // A kubelet restart: ends every plugin connection and outgoing call, stops both servers,
  // deletes the sockets in the device plugin directory except the checkpoint, empties every
  // resource's device list (resources stay known with zero capacity until their plugin
  // registers again; pod allocations are kept) and starts serving again. FailedPrecondition
  // when not running; when serving again fails, the error, and the kubelet stays stopped.
  [[nodiscard]] absl::Status Restart();

  // Ends plugin connections and outgoing calls (cancelled, not awaited to their deadline),
  // stops both servers and removes their sockets. Plugin sockets stay. State stays readable.
  // Returns promptly; idempotent.
  void Stop();

  bool running() const;
  int64_t restarts() const;
  std::filesystem::path registration_socket() const;
  const std::filesystem::path& pod_resources_socket() const {
    return options_.pod_resources_socket;
  }
  const std::filesystem::path& device_plugin_dir() const { return options_.device_plugin_dir; }

  // Queries.
  std::vector<std::string> Resources() const;  // sorted
  // NotFound when `resource` never registered.
  [[nodiscard]] absl::StatusOr<KubeletResource> Resource(absl::string_view resource) const;
  int64_t Capacity(absl::string_view resource) const;     // 0 when unknown
  int64_t Allocatable(absl::string_view resource) const;  // 0 when unknown
  // Outgoing calls to plugins now in progress, the dials inside Register included.
  int64_t plugin_calls_in_flight() const;
  // Node status patches sent, and the result of the latest (OK before the first).
  int64_t node_patches() const;
  absl::Status last_node_patch_status() const;

  // Blocking waits. Each returns OK once its condition holds, or DeadlineExceeded after
  // `timeout` on the injected clock with a message describing what was seen. Conditions on a
  // resource are false while it is unknown. WaitUntil's `condition` runs with the kubelet's
  // lock held and must not call back into it.
  [[nodiscard]] absl::Status WaitUntil(absl::string_view resource, absl::string_view what,
                                       std::function<bool(const KubeletResource&)> condition,
                                       absl::Duration timeout) const;
  // Exactly `count` healthy devices, with the stream open.
  [[nodiscard]] absl::Status WaitForHealthyDevices(absl::string_view resource, int64_t count,
                                                   absl::Duration timeout) const;
  // Registered since the latest (re)start, stream open.
  [[nodiscard]] absl::Status WaitForConnected(absl::string_view resource,
                                              absl::Duration timeout) const;
  [[nodiscard]] absl::Status WaitForDisconnected(absl::string_view resource,
                                                 absl::Duration timeout) const;
  // At least `count` successful registrations in all.
  [[nodiscard]] absl::Status WaitForRegistrations(absl::string_view resource, int64_t count,
                                                  absl::Duration timeout) const;
  // At least `count` ListAndWatch messages in all.
  [[nodiscard]] absl::Status WaitForListAndWatchMessages(absl::string_view resource, int64_t count,
                                                         absl::Duration timeout) const;
  [[nodiscard]] absl::Status WaitForPluginCallsInFlight(int64_t count,
                                                        absl::Duration timeout) const;

  // Calls into the resource's connected plugin, as the kubelet does. The plugin's gRPC error
  // comes back with its code and a message naming the call and resource; NotFound for an
  // unknown resource, FailedPrecondition when no plugin is connected. Responses are returned
  // as the plugin sent them, unchecked.
  [[nodiscard]] absl::StatusOr<v1beta1::AllocateResponse> Allocate(
      absl::string_view resource, const std::vector<std::vector<std::string>>& container_requests);
  // FailedPrecondition unless the plugin advertises get_preferred_allocation_available.
  [[nodiscard]] absl::StatusOr<v1beta1::PreferredAllocationResponse> GetPreferredAllocation(
      absl::string_view resource, const std::vector<std::string>& available,
      const std::vector<std::string>& must_include, int32_t size);
  // FailedPrecondition unless the plugin advertises pre_start_required.
  [[nodiscard]] absl::Status PreStartContainer(absl::string_view resource,
                                               const std::vector<std::string>& device_ids);

  // Drops the connection of the resource's current registration, as the kubelet does when any
  // stream of the resource ends: the plugin sees its stream end, every device turns unhealthy
  // and nothing reopens the stream; only a new registration does. NotFound for an unknown
  // resource, FailedPrecondition when no plugin is connected.
  [[nodiscard]] absl::Status DisconnectPlugin(absl::string_view resource);

  // Admits a container as the kubelet's device manager does: picks `count` healthy devices no
  // pod holds (the plugin's preferred ones first when it advertises GetPreferredAllocation,
  // then in list order), calls Allocate (and PreStartContainer when required) and records the
  // assignment, which PodResources then reports. Errors: InvalidArgument (count < 1),
  // NotFound/FailedPrecondition as for Allocate, ResourceExhausted (too few free healthy
  // devices), AlreadyExists (the container already holds this resource), Aborted (a
  // concurrent admission took a chosen device; retry), Internal (Allocate answered no
  // container), or the plugin's error. Nothing is held after a failure.
  [[nodiscard]] absl::StatusOr<PodAllocation> AllocatePod(const PodDeviceRequest& request);
  // A (re)start of an admitted container: PreStartContainer for each resource it holds whose
  // plugin requires it, as the kubelet does before every start, restarts included. NotFound
  // for an unknown container.
  [[nodiscard]] absl::Status StartContainer(absl::string_view pod_namespace,
                                            absl::string_view pod_name,
                                            absl::string_view container);
  // Frees every device the pod holds and forgets it. NotFound for an unknown pod.
  [[nodiscard]] absl::Status ReleasePod(absl::string_view pod_namespace,
                                        absl::string_view pod_name);
  // Device IDs of `resource` that pods hold (or admissions in progress reserve), sorted.
  std::vector<std::string> AllocatedDevices(absl::string_view resource) const;

 private:
  struct Endpoint;
  class PluginCall;
  class RegistrationService;
  class PodResourcesService;

  struct ResourceState {
    KubeletResource info;
    // The current registration's connection; null after Stop, Restart or a disconnect.
    std::shared_ptr<Endpoint> endpoint;
    // Connections of replaced or disconnected registrations: their streams run on (the
    // kubelet does not close them) until the plugin ends them; joined at Stop and Register.
    std::vector<std::shared_ptr<Endpoint>> replaced;
  };
  struct Connected {
    std::shared_ptr<Endpoint> endpoint;
    v1beta1::DevicePluginOptions options;
  };
  struct ContainerDevices {
    std::string resource;
    std::vector<KubeletDevice> devices;  // as they were when allocated
  };
  struct ContainerRecord {
    std::string name;
    std::vector<ContainerDevices> devices;
  };
  // Pods by (namespace, name), in that order.
  using PodKey = std::pair<std::string, std::string>;
  using PodMap = std::map<PodKey, std::vector<ContainerRecord>>;

  // Lifecycle, with lifecycle_mu_ held.
  absl::Status StartLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(lifecycle_mu_);
  void StopLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(lifecycle_mu_);
  absl::Status PrepareDirectories();
  void DeleteSockets();

  // Registration and the ListAndWatch stream of one endpoint.
  grpc::Status HandleRegister(const v1beta1::RegisterRequest& request);
  void Watch(std::stop_token stop, std::string resource, Endpoint* endpoint);
  bool ApplyDeviceList(absl::string_view resource, const Endpoint* endpoint,
                       const v1beta1::ListAndWatchResponse& response);
  bool EndStream(absl::string_view resource);
  // Disconnects the current registration; with mu_ held, so it only asks its watcher to stop.
  bool DisconnectLocked(ResourceState& state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stops and joins an endpoint's stream. Called without mu_, by whoever removed it.
  static void Retire(std::shared_ptr<Endpoint> endpoint);
  void PatchNode(const std::string& resource);

  // The connected endpoint of `resource` and its options.
  absl::StatusOr<Connected> Connection(absl::string_view resource) const;
  void Unreserve(const std::string& resource, const std::vector<std::string>& ids);

  const FakeKubeletOptions options_;

  // Serializes Start, Stop and Restart; taken before mu_. Each start builds fresh services
  // and servers.
  absl::Mutex lifecycle_mu_;
  std::unique_ptr<RegistrationService> registration_service_ ABSL_GUARDED_BY(lifecycle_mu_);
  std::unique_ptr<PodResourcesService> pod_resources_service_ ABSL_GUARDED_BY(lifecycle_mu_);
  std::unique_ptr<grpc::Server> registration_server_ ABSL_GUARDED_BY(lifecycle_mu_);
  std::unique_ptr<grpc::Server> pod_resources_server_ ABSL_GUARDED_BY(lifecycle_mu_);

  mutable absl::Mutex mu_;
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  // Registrations and plugin calls are admitted only while set.
  bool accepting_ ABSL_GUARDED_BY(mu_) = false;
  int64_t restarts_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, ResourceState, std::less<>> resources_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<PluginCall*> calls_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, absl::flat_hash_set<std::string>> allocated_
      ABSL_GUARDED_BY(mu_);
  PodMap pods_ ABSL_GUARDED_BY(mu_);
  int64_t node_patches_ ABSL_GUARDED_BY(mu_) = 0;
  // Orders GetPreferredAllocation's candidates as unpredictably as the kubelet's sets do.
  std::mt19937 random_ ABSL_GUARDED_BY(mu_){std::random_device{}()};
  absl::Status last_node_patch_ ABSL_GUARDED_BY(mu_);

  // Orders Node patches so that the last one written carries the latest counts.
  absl::Mutex patch_mu_ ABSL_ACQUIRED_BEFORE(mu_);
};

}  // namespace gpuop::fakes

#endif  // GPUOP_TEST_FAKES_KUBELET_FAKE_KUBELET_H_
