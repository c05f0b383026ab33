#include "agent/podresources/pod_resources.h"

#include <chrono>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "proto/podresources/v1/api.grpc.pb.h"

namespace gpuop::agent::podresources {
namespace {

// The kubelet's own client allows 16 MiB answers; a node with many pods needs more than gRPC's
// default 4 MiB.
constexpr int kMaxMessageBytes = 16 * 1024 * 1024;
constexpr int kMaxReconnectBackoffMs = 5000;

class KubeletPodLister final : public PodLister {
 public:
  explicit KubeletPodLister(std::filesystem::path socket) : socket_(std::move(socket)) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(kMaxMessageBytes);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, kMaxReconnectBackoffMs);
    stub_ = ::v1::PodResourcesLister::NewStub(grpc::CreateCustomChannel(
        "unix:" + socket_.string(), grpc::InsecureChannelCredentials(), args));
  }

  absl::StatusOr<std::vector<PodDevice>> List(absl::Duration timeout) override {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(timeout));
    ::v1::ListPodResourcesResponse response;
    const grpc::Status status = stub_->List(&context, ::v1::ListPodResourcesRequest(), &response);
    if (!status.ok()) {
      return absl::Status(
          static_cast<absl::StatusCode>(status.error_code()),
          absl::StrCat("PodResources List on ", socket_.string(), ": ", status.error_message()));
    }
    std::vector<PodDevice> devices;
    for (const ::v1::PodResources& pod : response.pod_resources()) {
      for (const ::v1::ContainerResources& container : pod.containers()) {
        for (const ::v1::ContainerDevices& group : container.devices()) {
          std::vector<int64_t> numa;
          for (const ::v1::NUMANode& node : group.topology().nodes()) numa.push_back(node.id());
          for (const std::string& id : group.device_ids()) {
            devices.push_back(PodDevice{.resource = group.resource_name(),
                                        .device_id = id,
                                        .pod_namespace = pod.namespace_(),
                                        .pod = pod.name(),
                                        .container = container.name(),
                                        .numa_nodes = numa});
          }
        }
        for (const ::v1::DynamicResource& claim : container.dynamic_resources()) {
          for (const ::v1::ClaimResource& result : claim.claim_resources()) {
            devices.push_back(
                PodDevice{.device_id = result.device_name(),
                          .pod_namespace = pod.namespace_(),
                          .pod = pod.name(),
                          .container = container.name(),
                          .dra = DraDevice{.driver = result.driver_name(),
                                           .pool = result.pool_name(),
                                           .device = result.device_name(),
                                           .claim_name = claim.claim_name(),
                                           .claim_namespace = claim.claim_namespace()}});
          }
        }
      }
    }
    return devices;
  }

 private:
  const std::filesystem::path socket_;
  std::unique_ptr<::v1::PodResourcesLister::Stub> stub_;
};

}  // namespace

std::unique_ptr<PodLister> NewKubeletPodLister(std::filesystem::path socket) {
  return std::make_unique<KubeletPodLister>(std::move(socket));
}

absl::StatusOr<std::vector<PodDevice>> ListAllocatableDevices(const std::filesystem::path& socket,
                                                              absl::Duration timeout) {
  auto stub = ::v1::PodResourcesLister::NewStub(
      grpc::CreateChannel("unix:" + socket.string(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(timeout));
  ::v1::AllocatableResourcesResponse response;
  const grpc::Status status =
      stub->GetAllocatableResources(&context, ::v1::AllocatableResourcesRequest(), &response);
  if (!status.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                        absl::StrCat("PodResources GetAllocatableResources on ", socket.string(),
                                     ": ", status.error_message()));
  }
  std::vector<PodDevice> devices;
  for (const ::v1::ContainerDevices& group : response.devices()) {
    std::vector<int64_t> numa;
    for (const ::v1::NUMANode& node : group.topology().nodes()) numa.push_back(node.id());
    for (const std::string& id : group.device_ids()) {
      devices.push_back(
          PodDevice{.resource = group.resource_name(), .device_id = id, .numa_nodes = numa});
    }
  }
  return devices;
}

}  // namespace gpuop::agent::podresources
