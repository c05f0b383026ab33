#include "test/fakes/kubelet/test_device_plugin.h"

#include <algorithm>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gpuop::fakes {
namespace {

// A sync handler cannot be woken by a client's cancellation, so an open stream looks at it
// this often.
constexpr absl::Duration kCancelCheck = absl::Milliseconds(20);

absl::Status FromGrpc(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

}  // namespace

v1beta1::Device MakeDevice(const std::string& id, bool healthy, int64_t numa_node) {
  v1beta1::Device device;
  device.set_id(id);
  device.set_health(healthy ? "Healthy" : "Unhealthy");
  if (numa_node >= 0) device.mutable_topology()->add_nodes()->set_id(numa_node);
  return device;
}

TestDevicePlugin::TestDevicePlugin(TestDevicePluginOptions options)
    : options_(std::move(options)) {}

TestDevicePlugin::~TestDevicePlugin() { Stop(); }

absl::Status TestDevicePlugin::Serve() {
  Stop();
  {
    absl::MutexLock lock(&mu_);
    stopping_ = false;
  }
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket().string(), grpc::InsecureServerCredentials());
  builder.RegisterService(this);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr) {
    return absl::UnavailableError("test device plugin: serve on " + socket().string());
  }
  return absl::OkStatus();
}

void TestDevicePlugin::Stop() {
  if (server_ == nullptr) return;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
  server_.reset();
  std::error_code ec;
  std::filesystem::remove(socket(), ec);
}

v1beta1::RegisterRequest TestDevicePlugin::RegisterRequest() const {
  v1beta1::RegisterRequest request;
  request.set_version("v1beta1");
  request.set_endpoint(options_.endpoint);
  request.set_resource_name(options_.resource);
  *request.mutable_options() = options_.options;
  return request;
}

absl::Status TestDevicePlugin::RegisterWith(const std::filesystem::path& kubelet_socket,
                                            const v1beta1::RegisterRequest& request) {
  auto stub = v1beta1::Registration::NewStub(
      grpc::CreateChannel("unix:" + kubelet_socket.string(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  v1beta1::Empty response;
  const grpc::Status status = stub->Register(&context, request, &response);
  absl::MutexLock lock(&mu_);
  events_.push_back(status.ok() ? "Register returned" : "Register failed");
  return FromGrpc(status);
}

void TestDevicePlugin::SetDevices(std::vector<v1beta1::Device> devices) {
  absl::MutexLock lock(&mu_);
  devices_.clear_devices();
  for (v1beta1::Device& device : devices) *devices_.add_devices() = std::move(device);
  ++version_;
}

void TestDevicePlugin::EndStreams() {
  absl::MutexLock lock(&mu_);
  ++end_epoch_;
}

void TestDevicePlugin::FailAllocate(grpc::Status status) {
  absl::MutexLock lock(&mu_);
  allocate_error_ = std::move(status);
}

std::vector<std::string> TestDevicePlugin::events() const {
  absl::MutexLock lock(&mu_);
  return events_;
}

int TestDevicePlugin::open_streams() const {
  absl::MutexLock lock(&mu_);
  return open_streams_;
}

absl::Status TestDevicePlugin::WaitForOpenStreams(int count, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  const auto reached = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return open_streams_ == count; };
  if (mu_.AwaitWithTimeout(absl::Condition(&reached), timeout)) return absl::OkStatus();
  return absl::DeadlineExceededError(
      absl::StrCat("waited for ", count, " open ListAndWatch streams; ", open_streams_, " are"));
}

std::vector<v1beta1::AllocateRequest> TestDevicePlugin::allocate_requests() const {
  absl::MutexLock lock(&mu_);
  return allocate_requests_;
}

std::vector<v1beta1::PreferredAllocationRequest> TestDevicePlugin::preferred_requests() const {
  absl::MutexLock lock(&mu_);
  return preferred_requests_;
}

std::vector<v1beta1::PreStartContainerRequest> TestDevicePlugin::pre_start_requests() const {
  absl::MutexLock lock(&mu_);
  return pre_start_requests_;
}

grpc::Status TestDevicePlugin::GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                                      v1beta1::DevicePluginOptions* response) {
  absl::MutexLock lock(&mu_);
  events_.push_back("GetDevicePluginOptions");
  *response = options_.options;
  return grpc::Status::OK;
}

grpc::Status TestDevicePlugin::ListAndWatch(
    grpc::ServerContext* context, const v1beta1::Empty*,
    grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) {
  absl::MutexLock lock(&mu_);
  events_.push_back("ListAndWatch");
  ++open_streams_;
  const int64_t epoch = end_epoch_;
  int64_t sent = 0;
  const auto wake = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return stopping_ || end_epoch_ != epoch || version_ != sent;
  };
  while (!stopping_ && end_epoch_ == epoch && !context->IsCancelled()) {
    if (version_ != sent) {
      const v1beta1::ListAndWatchResponse message = devices_;
      sent = version_;
      mu_.Unlock();
      const bool written = writer->Write(message);
      mu_.Lock();
      if (!written) break;
      continue;
    }
    mu_.AwaitWithTimeout(absl::Condition(&wake), kCancelCheck);
  }
  --open_streams_;
  return grpc::Status::OK;
}

grpc::Status TestDevicePlugin::GetPreferredAllocation(
    grpc::ServerContext*, const v1beta1::PreferredAllocationRequest* request,
    v1beta1::PreferredAllocationResponse* response) {
  absl::MutexLock lock(&mu_);
  events_.push_back("GetPreferredAllocation");
  preferred_requests_.push_back(*request);
  for (const v1beta1::ContainerPreferredAllocationRequest& container :
       request->container_requests()) {
    v1beta1::ContainerPreferredAllocationResponse* out = response->add_container_responses();
    std::vector<std::string> available(container.available_deviceids().begin(),
                                       container.available_deviceids().end());
    std::sort(available.rbegin(), available.rend());  // the kubelet sends them unordered
    for (size_t i = 0; i < available.size() && out->deviceids_size() < container.allocation_size();
         ++i) {
      out->add_deviceids(available[i]);
    }
  }
  return grpc::Status::OK;
}

grpc::Status TestDevicePlugin::Allocate(grpc::ServerContext*,
                                        const v1beta1::AllocateRequest* request,
                                        v1beta1::AllocateResponse* response) {
  absl::MutexLock lock(&mu_);
  events_.push_back("Allocate");
  allocate_requests_.push_back(*request);
  if (!allocate_error_.ok()) return allocate_error_;
  for (const v1beta1::ContainerAllocateRequest& container : request->container_requests()) {
    v1beta1::ContainerAllocateResponse* out = response->add_container_responses();
    (*out->mutable_envs())["TEST_DEVICES"] = absl::StrJoin(container.devices_ids(), ",");
    for (const std::string& id : container.devices_ids()) {
      v1beta1::DeviceSpec* spec = out->add_devices();
      spec->set_container_path("/dev/" + id);
      spec->set_host_path("/dev/" + id);
      spec->set_permissions("rw");
    }
  }
  return grpc::Status::OK;
}

grpc::Status TestDevicePlugin::PreStartContainer(grpc::ServerContext*,
                                                 const v1beta1::PreStartContainerRequest* request,
                                                 v1beta1::PreStartContainerResponse*) {
  absl::MutexLock lock(&mu_);
  events_.push_back("PreStartContainer");
  pre_start_requests_.push_back(*request);
  return grpc::Status::OK;
}

}  // namespace gpuop::fakes
