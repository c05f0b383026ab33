#ifndef GPUOP_TEST_FAKES_KUBELET_FAKE_KUBELET_INTERNAL_H_
#define GPUOP_TEST_FAKES_KUBELET_FAKE_KUBELET_INTERNAL_H_

// The FakeKubelet's private types, shared by its source files. Nothing else includes this.

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "proto/deviceplugin/v1beta1/api.grpc.pb.h"
#include "proto/podresources/v1/api.grpc.pb.h"
#include "test/fakes/kubelet/fake_kubelet.h"

namespace gpuop::fakes {

// The kubelet's connection to one registered plugin.
struct FakeKubelet::Endpoint {
  std::string socket;  // absolute path
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub;
  // Set when the ListAndWatch stream has ended and the watcher is about to return.
  std::atomic<bool> done{false};
  // Set when the kubelet dropped the connection: messages still in flight are not read.
  std::atomic<bool> closed{false};
  // Reads the ListAndWatch stream. Declared last so that it is stopped and joined before the
  // stub it uses goes away.
  std::jthread watcher;
};

// The context of one outgoing call to a plugin, with its deadline. Stop and Restart cancel
// every call in progress; one begun while the kubelet is not accepting is cancelled at once.
class FakeKubelet::PluginCall {
 public:
  PluginCall(FakeKubelet& kubelet, absl::Duration timeout);
  ~PluginCall();
  PluginCall(const PluginCall&) = delete;
  PluginCall& operator=(const PluginCall&) = delete;

  grpc::ClientContext* context() { return &context_; }
  void Cancel() { context_.TryCancel(); }

 private:
  FakeKubelet& kubelet_;
  grpc::ClientContext context_;
};

class FakeKubelet::RegistrationService final : public v1beta1::Registration::Service {
 public:
  explicit RegistrationService(FakeKubelet& kubelet) : kubelet_(kubelet) {}
  grpc::Status Register(grpc::ServerContext* context, const v1beta1::RegisterRequest* request,
                        v1beta1::Empty* response) override;

 private:
  FakeKubelet& kubelet_;
};

class FakeKubelet::PodResourcesService final : public v1::PodResourcesLister::Service {
 public:
  explicit PodResourcesService(FakeKubelet& kubelet) : kubelet_(kubelet) {}
  grpc::Status List(grpc::ServerContext* context, const v1::ListPodResourcesRequest* request,
                    v1::ListPodResourcesResponse* response) override;
  grpc::Status GetAllocatableResources(grpc::ServerContext* context,
                                       const v1::AllocatableResourcesRequest* request,
                                       v1::AllocatableResourcesResponse* response) override;
  grpc::Status Get(grpc::ServerContext* context, const v1::GetPodResourcesRequest* request,
                   v1::GetPodResourcesResponse* response) override;

 private:
  FakeKubelet& kubelet_;
};

// `status` as an absl::Status with the same code, its message prefixed by `what`.
absl::Status FromGrpc(const grpc::Status& status, absl::string_view what);
grpc::Status ToGrpc(const absl::Status& status);

}  // namespace gpuop::fakes

#endif  // GPUOP_TEST_FAKES_KUBELET_FAKE_KUBELET_INTERNAL_H_
