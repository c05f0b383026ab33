#ifndef GPUOP_TEST_FAKES_KUBELET_TEST_DEVICE_PLUGIN_H_
#define GPUOP_TEST_FAKES_KUBELET_TEST_DEVICE_PLUGIN_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/deviceplugin/v1beta1/api.grpc.pb.h"

// A minimal device plugin that the fake kubelet's tests drive: a real DevicePlugin gRPC server
// on <dir>/<endpoint> whose device list, options and failures the test sets, and which
// records what the kubelet asked of it. Thread-safe.
namespace gpuop::fakes {

struct TestDevicePluginOptions {
  std::filesystem::path dir;
  std::string endpoint = "test-gpu.sock";
  std::string resource = "example.com/gpu";
  v1beta1::DevicePluginOptions options;
};

// A device for ListAndWatch; `numa_node` < 0 leaves topology unset.
v1beta1::Device MakeDevice(const std::string& id, bool healthy = true, int64_t numa_node = -1);

class TestDevicePlugin final : public v1beta1::DevicePlugin::Service {
 public:
  explicit TestDevicePlugin(TestDevicePluginOptions options);
  ~TestDevicePlugin() override;

  // Starts serving on <dir>/<endpoint>, replacing a stale socket.
  [[nodiscard]] absl::Status Serve();
  // Ends open streams, stops the server and removes the socket. Idempotent.
  void Stop();

  // The request Register() sends: this plugin's version, endpoint, resource and options.
  v1beta1::RegisterRequest RegisterRequest() const;
  [[nodiscard]] absl::Status Register(const std::filesystem::path& kubelet_socket) {
    return RegisterWith(kubelet_socket, RegisterRequest());
  }
  // Calls Registration/Register on the kubelet and logs "Register returned" when it does.
  [[nodiscard]] absl::Status RegisterWith(const std::filesystem::path& kubelet_socket,
                                          const v1beta1::RegisterRequest& request);

  // Replaces the device list; every open stream sends it (and each new stream starts with it).
  void SetDevices(std::vector<v1beta1::Device> devices);
  // Makes every open ListAndWatch handler return OK, ending the streams.
  void EndStreams();
  // Allocate answers with this error from now on (OK: answers normally).
  void FailAllocate(grpc::Status status);

  // The RPCs served and Register results, in order: "GetDevicePluginOptions",
  // "ListAndWatch", "Allocate", "GetPreferredAllocation", "PreStartContainer",
  // "Register returned", "Register failed".
  std::vector<std::string> events() const;
  int open_streams() const;
  [[nodiscard]] absl::Status WaitForOpenStreams(int count, absl::Duration timeout) const;
  std::vector<v1beta1::AllocateRequest> allocate_requests() const;
  std::vector<v1beta1::PreferredAllocationRequest> preferred_requests() const;
  std::vector<v1beta1::PreStartContainerRequest> pre_start_requests() const;

  // DevicePlugin. Allocate answers each container with env TEST_DEVICES=<ids joined by ','>
  // and a device node per ID. GetPreferredAllocation prefers the `size` greatest available IDs,
  // greatest first, so that tests can tell its choice from a first-N default.
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

  std::filesystem::path socket() const { return options_.dir / options_.endpoint; }

 private:
  const TestDevicePluginOptions options_;
  std::unique_ptr<grpc::Server> server_;  // only Serve and Stop, from the test's thread

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  v1beta1::ListAndWatchResponse devices_ ABSL_GUARDED_BY(mu_);
  int64_t version_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t end_epoch_ ABSL_GUARDED_BY(mu_) = 0;
  int open_streams_ ABSL_GUARDED_BY(mu_) = 0;
  grpc::Status allocate_error_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> events_ ABSL_GUARDED_BY(mu_);
  std::vector<v1beta1::AllocateRequest> allocate_requests_ ABSL_GUARDED_BY(mu_);
  std::vector<v1beta1::PreferredAllocationRequest> preferred_requests_ ABSL_GUARDED_BY(mu_);
  std::vector<v1beta1::PreStartContainerRequest> pre_start_requests_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpuop::fakes

#endif  // GPUOP_TEST_FAKES_KUBELET_TEST_DEVICE_PLUGIN_H_
