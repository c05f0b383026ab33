#ifndef GPUOP_AGENT_DEVICEPLUGIN_PLUGIN_SERVER_H_
#define GPUOP_AGENT_DEVICEPLUGIN_PLUGIN_SERVER_H_

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "agent/deviceplugin/allocate_response.h"
#include "agent/deviceplugin/allocation.h"
#include "agent/deviceplugin/config.h"
#include "agent/deviceplugin/resources.h"
#include "proto/deviceplugin/v1beta1/api.grpc.pb.h"

namespace gpuop::agent {

struct ResourceServerOptions {
  std::string resource;  // "nvidia.com/gpu"
  // The kubelet's device plugin directory (/var/lib/kubelet/device-plugins).
  std::filesystem::path plugin_dir;
  // Called (on a gRPC thread; it must not block) when a ListAndWatch stream ends without Stop():
  // the kubelet closed it, so the resource is gone from the node until it registers again.
  std::function<void()> on_stream_end;
};

// A device and whether the kubelet may hand it out.
struct AdvertisedDevice {
  PluginDevice device;
  bool healthy = true;
};

// The kubelet device plugin API (v1beta1) for one resource, served over gRPC on
// <plugin_dir>/<SocketName(resource)>.
//
// ListAndWatch sends the complete device list at once and again after every SetDevices() that
// changes it. Allocate answers as the settings say (ContainerResponse: CDI names, annotations,
// NVIDIA_VISIBLE_DEVICES, volume mounts, device specs), deduplicating time-slicing replicas of
// one GPU; an unknown device fails the whole call, as the API requires. GetPreferredAllocation is
// topology-aware (PreferredAllocation).
//
// Lifecycle: Start() (serve), Register() (announce to the kubelet; again after a kubelet
// restart or a stream the kubelet ended, see on_stream_end), Stop() (end streams, stop
// serving, remove the socket). Thread-safe.
class ResourceServer final : public v1beta1::DevicePlugin::Service {
 public:
  explicit ResourceServer(ResourceServerOptions options);
  ~ResourceServer() override;

  // The socket file name: "gpuop-" + the resource with '/' and '.' made safe.
  static std::string SocketName(const std::string& resource);

  // Removes a stale socket of the same name and starts serving.
  [[nodiscard]] absl::Status Start();
  // Calls the kubelet's Registration service on `kubelet_socket` (blocks until the kubelet has
  // called back GetDevicePluginOptions, or 10 s).
  [[nodiscard]] absl::Status Register(const std::filesystem::path& kubelet_socket);
  void Stop();
  bool serving() const;

  // Replaces the device list and topology; streams see it if it differs from the last.
  void SetDevices(std::vector<AdvertisedDevice> devices, Topology topology);
  // Replaces how Allocate answers (after a configuration reload).
  void SetSettings(AllocateSettings settings);

  const std::string& resource() const { return options_.resource; }
  std::filesystem::path socket_path() const;
  // ListAndWatch messages sent so far, over all streams.
  int64_t updates_sent() const;
  // ListAndWatch streams open now, and those the kubelet ended (not Stop()) so far.
  int open_streams() const;
  int64_t streams_ended_by_kubelet() const;

  // The gRPC methods.
  grpc::Status GetDevicePluginOptions(grpc::ServerContext* context, const v1beta1::Empty* request,
                                      v1beta1::DevicePluginOptions* response) override;
  grpc::Status ListAndWatch(grpc::ServerContext* context, const v1beta1::Empty* request,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override;
  grpc::Status GetPreferredAllocation(grpc::ServerContext* context,
                                      const v1beta1::PreferredAllocationRequest* request,
                                      v1beta1::PreferredAllocationResponse* response) override;
  grpc::Status Allocate(grpc::ServerContext* context, const v1beta1::AllocateRequest* request,
                        v1beta1::AllocateResponse* response) override;
  grpc::Status PreStartContainer(grpc::ServerContext* context,
                                 const v1beta1::PreStartContainerRequest* request,
                                 v1beta1::PreStartContainerResponse* response) override;

 private:
  v1beta1::ListAndWatchResponse ListLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ResourceServerOptions options_;
  mutable absl::Mutex mu_;
  std::vector<AdvertisedDevice> devices_ ABSL_GUARDED_BY(mu_);
  Topology topology_ ABSL_GUARDED_BY(mu_);
  AllocateSettings settings_ ABSL_GUARDED_BY(mu_);
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t updates_sent_ ABSL_GUARDED_BY(mu_) = 0;
  int open_streams_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t streams_ended_by_kubelet_ ABSL_GUARDED_BY(mu_) = 0;
  std::unique_ptr<grpc::Server> server_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_DEVICEPLUGIN_PLUGIN_SERVER_H_
