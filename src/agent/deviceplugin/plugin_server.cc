#include "agent/deviceplugin/plugin_server.h"

#include <algorithm>
#include <set>

#include <unistd.h>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"

namespace gpuop::agent {
namespace {

constexpr char kApiVersion[] = "v1beta1";
constexpr char kHealthy[] = "Healthy";
constexpr char kUnhealthy[] = "Unhealthy";

grpc::Status Invalid(const std::string& message) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, message);
}

// A fresh id for a CDI annotation key, so the annotations of two resources allocated to one
// container never collide (NVIDIA's plugin uses a random UUID the same way).
std::string ResponseId() {
  static absl::Mutex mu(absl::kConstInit);
  static absl::BitGen* gen = new absl::BitGen();
  absl::MutexLock lock(&mu);
  return absl::StrFormat("%016x%016x", absl::Uniform<uint64_t>(*gen),
                         absl::Uniform<uint64_t>(*gen));
}

}  // namespace

ResourceServer::ResourceServer(ResourceServerOptions options) : options_(std::move(options)) {}

ResourceServer::~ResourceServer() { Stop(); }

std::string ResourceServer::SocketName(const std::string& resource) {
  return absl::StrCat("gpuop-", absl::StrReplaceAll(resource, {{"/", "-"}, {"+", "-"}}), ".sock");
}

std::filesystem::path ResourceServer::socket_path() const {
  return options_.plugin_dir / SocketName(options_.resource);
}

bool ResourceServer::serving() const {
  absl::MutexLock lock(&mu_);
  return server_ != nullptr;
}

int64_t ResourceServer::updates_sent() const {
  absl::MutexLock lock(&mu_);
  return updates_sent_;
}

int ResourceServer::open_streams() const {
  absl::MutexLock lock(&mu_);
  return open_streams_;
}

int64_t ResourceServer::streams_ended_by_kubelet() const {
  absl::MutexLock lock(&mu_);
  return streams_ended_by_kubelet_;
}

absl::Status ResourceServer::Start() {
  absl::MutexLock lock(&mu_);
  if (server_ != nullptr) return absl::OkStatus();
  const std::filesystem::path path = socket_path();
  std::error_code ec;
  std::filesystem::remove(path, ec);  // A socket left by an earlier run of the agent.
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat("unix://", path.string()),
                           grpc::InsecureServerCredentials());
  builder.RegisterService(this);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("device plugin ", options_.resource, ": cannot serve on ", path.string()));
  }
  stopping_ = false;
  return absl::OkStatus();
}

void ResourceServer::Stop() {
  std::unique_ptr<grpc::Server> server;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;  // Wakes ListAndWatch handlers so Shutdown does not wait on them.
    server = std::move(server_);
  }
  if (server != nullptr) {
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    server->Wait();
    std::error_code ec;
    std::filesystem::remove(socket_path(), ec);
  }
}

absl::Status ResourceServer::Register(const std::filesystem::path& kubelet_socket) {
  auto channel = grpc::CreateChannel(absl::StrCat("unix://", kubelet_socket.string()),
                                     grpc::InsecureChannelCredentials());
  auto stub = v1beta1::Registration::NewStub(channel);
  v1beta1::RegisterRequest request;
  request.set_version(kApiVersion);
  request.set_endpoint(SocketName(options_.resource));
  request.set_resource_name(options_.resource);
  request.mutable_options()->set_get_preferred_allocation_available(true);
  v1beta1::Empty response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  const grpc::Status status = stub->Register(&context, request, &response);
  if (!status.ok()) {
    return absl::UnavailableError(absl::StrCat("register ", options_.resource,
                                               " with the kubelet at ", kubelet_socket.string(),
                                               ": ", status.error_message()));
  }
  return absl::OkStatus();
}

void ResourceServer::SetSettings(AllocateSettings settings) {
  absl::MutexLock lock(&mu_);
  settings_ = std::move(settings);
}

void ResourceServer::SetDevices(std::vector<AdvertisedDevice> devices, Topology topology) {
  absl::MutexLock lock(&mu_);
  bool same = devices.size() == devices_.size();
  for (size_t i = 0; same && i < devices.size(); ++i) {
    same = devices[i].device.id == devices_[i].device.id &&
           devices[i].healthy == devices_[i].healthy &&
           devices[i].device.numa_node == devices_[i].device.numa_node;
  }
  devices_ = std::move(devices);
  topology_ = std::move(topology);
  if (!same) ++version_;
}

v1beta1::ListAndWatchResponse ResourceServer::ListLocked() const {
  v1beta1::ListAndWatchResponse list;
  for (const auto& d : devices_) {
    v1beta1::Device* device = list.add_devices();
    device->set_id(d.device.id);
    device->set_health(d.healthy ? kHealthy : kUnhealthy);
    if (d.device.numa_node.has_value() && *d.device.numa_node >= 0) {
      device->mutable_topology()->add_nodes()->set_id(*d.device.numa_node);
    }
  }
  return list;
}

grpc::Status ResourceServer::GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                                    v1beta1::DevicePluginOptions* response) {
  response->set_get_preferred_allocation_available(true);
  response->set_pre_start_required(false);
  return grpc::Status::OK;
}

grpc::Status ResourceServer::ListAndWatch(
    grpc::ServerContext* context, const v1beta1::Empty*,
    grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) {
  {
    absl::MutexLock lock(&mu_);
    ++open_streams_;
  }
  uint64_t sent_version = 0;
  bool first = true;
  while (true) {
    v1beta1::ListAndWatchResponse list;
    {
      absl::MutexLock lock(&mu_);
      auto wake = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return first || stopping_ || version_ != sent_version || context->IsCancelled();
      };
      // The cancellation check needs a periodic look: gRPC does not signal our mutex.
      while (!mu_.AwaitWithTimeout(absl::Condition(&wake), absl::Milliseconds(200))) {
      }
      if (stopping_ || context->IsCancelled()) break;
      list = ListLocked();
      sent_version = version_;
      first = false;
      ++updates_sent_;
    }
    if (!writer->Write(list)) break;  // The kubelet went away.
  }
  bool by_kubelet = false;
  {
    absl::MutexLock lock(&mu_);
    --open_streams_;
    by_kubelet = !stopping_;
    if (by_kubelet) ++streams_ended_by_kubelet_;
  }
  // The kubelet never opens a stream again by itself: only a new Register brings it back.
  if (by_kubelet && options_.on_stream_end) options_.on_stream_end();
  return grpc::Status::OK;
}

grpc::Status ResourceServer::GetPreferredAllocation(
    grpc::ServerContext*, const v1beta1::PreferredAllocationRequest* request,
    v1beta1::PreferredAllocationResponse* response) {
  std::vector<PluginDevice> devices;
  Topology topology;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& d : devices_) devices.push_back(d.device);
    topology = topology_;
  }
  for (const auto& container : request->container_requests()) {
    std::vector<std::string> available(container.available_deviceids().begin(),
                                       container.available_deviceids().end());
    std::vector<std::string> must(container.must_include_deviceids().begin(),
                                  container.must_include_deviceids().end());
    const std::vector<std::string> ids =
        PreferredAllocation(devices, topology, available, must, container.allocation_size());
    auto* out = response->add_container_responses();
    for (const auto& id : ids) out->add_deviceids(id);
  }
  return grpc::Status::OK;
}

grpc::Status ResourceServer::Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* request,
                                      v1beta1::AllocateResponse* response) {
  absl::MutexLock lock(&mu_);
  std::error_code ec;
  const bool spec_present =
      !settings_.cdi_spec.empty() && std::filesystem::exists(settings_.cdi_spec, ec);
  const DeviceListStrategies strategies = EffectiveStrategies(settings_, spec_present);
  for (const auto& container : request->container_requests()) {
    std::vector<const PluginDevice*> chosen;
    for (const auto& id : container.devices_ids()) {
      auto it = std::find_if(devices_.begin(), devices_.end(),
                             [&](const AdvertisedDevice& d) { return d.device.id == id; });
      if (it == devices_.end()) {
        return Invalid(
            absl::StrCat("allocate ", options_.resource, ": unknown device \"", id, "\""));
      }
      chosen.push_back(&it->device);
    }
    if (settings_.fail_requests_greater_than_one && chosen.size() > 1 &&
        std::any_of(chosen.begin(), chosen.end(),
                    [](const PluginDevice* d) { return d->replicas > 1; })) {
      return Invalid(absl::StrCat("allocate ", options_.resource, ": ", chosen.size(),
                                  " shared devices requested; this node allows one per container "
                                  "(failRequestsGreaterThanOne)"));
    }
    // Replicas of one GPU are the same device to the container.
    std::vector<const PluginDevice*> physical;
    std::set<std::string> seen;
    for (const auto* d : chosen) {
      if (seen.insert(d->physical_id).second) physical.push_back(d);
    }
    *response->add_container_responses() = ContainerResponse(
        physical, settings_, strategies, ResponseId(), [this](const std::string& host_path) {
          std::error_code exists_ec;
          return std::filesystem::exists(
              settings_.host_root / std::filesystem::path(host_path).relative_path(), exists_ec);
        });
    if (std::any_of(chosen.begin(), chosen.end(), [](const PluginDevice* d) { return d->mps; })) {
      AddMpsClient(
          options_.resource, settings_.mps_root,
          *response->mutable_container_responses(response->container_responses_size() - 1));
    }
  }
  return grpc::Status::OK;
}

grpc::Status ResourceServer::PreStartContainer(grpc::ServerContext*,
                                               const v1beta1::PreStartContainerRequest*,
                                               v1beta1::PreStartContainerResponse*) {
  return grpc::Status::OK;
}

}  // namespace gpuop::agent
