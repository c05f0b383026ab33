#ifndef GPUOP_AGENT_DEVICEPLUGIN_MANAGER_H_
#define GPUOP_AGENT_DEVICEPLUGIN_MANAGER_H_

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "agent/deviceplugin/plugin_server.h"
#include "agent/deviceplugin/resources.h"
#include "agent/health/tracker.h"

namespace gpuop::agent {

struct DevicePluginManagerOptions {
  std::filesystem::path plugin_dir = "/var/lib/kubelet/device-plugins";
  std::string kubelet_socket_name = "kubelet.sock";
  // How often an unregistered resource retries when the kubelet is not answering.
  absl::Duration retry_interval = absl::Seconds(1);
  // How long the kubelet gets to see the end of streams the plugin closed before the plugin
  // registers the resource again (see the class comment).
  absl::Duration reregister_delay = absl::Seconds(2);
};

// Runs one ResourceServer per advertised resource and keeps each registered with the kubelet.
//
// A kubelet restart deletes every socket in the device plugin directory and re-creates
// kubelet.sock; the manager watches the directory with inotify and, as soon as kubelet.sock
// appears or one of its own sockets disappears, serves again on a fresh socket and registers
// again, so the node's GPUs come back within moments rather than after a poll. Registration
// failures are retried every retry_interval.
//
// The kubelet never reopens a ListAndWatch stream, so a stream the kubelet ended is answered
// with a new registration. When a registration replaces one whose stream is still open (our
// socket was deleted on a live kubelet, or the kubelet holds a second stream to us), the old
// streams end first and the registration waits reregister_delay: the kubelet's device manager
// disconnects whichever registration of the resource is current when any of its streams ends,
// so an old stream ending after the new registration would take the resource off the node.
//
// Thread-safe.
class DevicePluginManager {
 public:
  explicit DevicePluginManager(DevicePluginManagerOptions options);
  ~DevicePluginManager();

  // Starts watching the directory and registering. FailedPrecondition when the directory
  // cannot be watched.
  [[nodiscard]] absl::Status Start();
  void Stop();

  // Makes the served resources those of `plan`: new resources start serving and register,
  // vanished ones stop, the others get their new device list; every one answers Allocate with
  // `settings` from now on. Health comes from `health` (all healthy when null).
  [[nodiscard]] absl::Status Apply(const ResourcePlan& plan, const AllocateSettings& settings,
                                   const Topology& topology, const HealthTracker* health);
  // Re-reads health for the devices already served (after hardware events).
  void RefreshHealth(const HealthTracker& health);

  std::vector<std::string> resources() const;
  // Successful Register calls so far, over all resources.
  int registrations() const { return registrations_.load(); }

 private:
  struct Entry {
    std::shared_ptr<ResourceServer> server;
    std::vector<PluginDevice> devices;
    bool registered = false;
    int64_t seen_stream_ends = 0;  // the server's streams_ended_by_kubelet() when last looked
    absl::Time not_before = absl::InfinitePast();  // no registration before this
    int64_t kubelet_generation = -1;               // of the latest registration
    // Streams of a kubelet that has restarted since, still open when the restart was seen: the
    // server notices their end only later (it polls for cancellation), and those ends must not
    // be taken for the new kubelet ending the stream of the new registration.
    int64_t stale_streams = 0;
  };

  void Run(std::stop_token stop);
  // Re-serves resources whose socket is gone or whose stream the kubelet ended and registers
  // the unregistered ones. Returns how long until a delayed registration is due (infinite when
  // none is).
  absl::Duration Reconcile();
  void Wake();
  std::vector<AdvertisedDevice> Advertise(const std::vector<PluginDevice>& devices,
                                          const HealthTracker* health) const;

  const DevicePluginManagerOptions options_;
  mutable absl::Mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  Topology topology_ ABSL_GUARDED_BY(mu_);
  // Counts the kubelet.sock creations seen: a kubelet (re)start.
  int64_t kubelet_generation_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<int> registrations_{0};
  int inotify_fd_ = -1;
  int wake_fd_ = -1;
  std::jthread thread_;
};

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_DEVICEPLUGIN_MANAGER_H_
