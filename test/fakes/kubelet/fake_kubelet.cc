// Lifecycle, registration and ListAndWatch of the fake kubelet.

#include "test/fakes/kubelet/fake_kubelet.h"

#include <algorithm>
#include <fstream>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "test/fakes/kubelet/fake_kubelet_internal.h"
#include "test/fakes/kubelet/registration_rules.h"

namespace gpuop::fakes {
namespace fs = std::filesystem;
namespace {

// What the kubelet writes into a fresh checkpoint: no pods, no devices. Plugins never read it;
// it only has to survive a restart.
constexpr char kEmptyCheckpoint[] =
    R"({"Data":{"PodDeviceEntries":null,"RegisteredDevices":{}},"Checksum":0})";
// sockaddr_un.sun_path holds 108 bytes with the terminating NUL.
constexpr size_t kMaxSocketPath = 107;
// How long a stopping server lets running handlers finish before cancelling them.
constexpr absl::Duration kShutdownGrace = absl::Seconds(2);

absl::StatusOr<std::unique_ptr<grpc::Server>> Serve(const fs::path& socket,
                                                    grpc::Service* service) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket.string(), grpc::InsecureServerCredentials());
  builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) {
    return absl::UnavailableError(absl::StrCat("fake kubelet: serve gRPC on unix:", socket.string(),
                                               ": the server did not start"));
  }
  return server;
}

void Shutdown(std::unique_ptr<grpc::Server>& server) {
  if (server == nullptr) return;
  server->Shutdown(absl::ToChronoTime(absl::Now() + kShutdownGrace));
  server.reset();
}

absl::Status CheckSocketPath(const fs::path& path, absl::string_view what) {
  if (!path.is_absolute()) {
    return absl::InvalidArgumentError(
        absl::StrCat("fake kubelet: ", what, " \"", path.string(), "\" is not absolute"));
  }
  if (path.string().size() > kMaxSocketPath) {
    return absl::InvalidArgumentError(absl::StrCat("fake kubelet: ", what, " \"", path.string(),
                                                   "\" is longer than a unix socket path may be"));
  }
  return absl::OkStatus();
}

absl::Status MakeDirectory(const fs::path& dir) {
  std::error_code ec;
  if (fs::create_directories(dir, ec)) {
    fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec, ec);
  }
  if (ec) {
    return absl::InternalError(
        absl::StrCat("fake kubelet: create directory ", dir.string(), ": ", ec.message()));
  }
  return absl::OkStatus();
}

void Recount(KubeletResource& info) {
  info.capacity = static_cast<int64_t>(info.devices.size());
  info.allocatable = 0;
  for (const KubeletDevice& device : info.devices) info.allocatable += device.healthy ? 1 : 0;
}

}  // namespace

absl::Status FromGrpc(const grpc::Status& status, absl::string_view what) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      absl::StrCat(what, ": ", status.error_message()));
}

grpc::Status ToGrpc(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

FakeKubelet::PluginCall::PluginCall(FakeKubelet& kubelet, absl::Duration timeout)
    : kubelet_(kubelet) {
  context_.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  absl::MutexLock lock(&kubelet_.mu_);
  kubelet_.calls_.insert(this);
  if (!kubelet_.accepting_) Cancel();
}

FakeKubelet::PluginCall::~PluginCall() {
  absl::MutexLock lock(&kubelet_.mu_);
  kubelet_.calls_.erase(this);
}

grpc::Status FakeKubelet::RegistrationService::Register(grpc::ServerContext*,
                                                        const v1beta1::RegisterRequest* request,
                                                        v1beta1::Empty*) {
  return kubelet_.HandleRegister(*request);
}

FakeKubelet::FakeKubelet(FakeKubeletOptions options) : options_(std::move(options)) {}

FakeKubelet::~FakeKubelet() { Stop(); }

absl::Status FakeKubelet::Start() {
  absl::MutexLock lifecycle(&lifecycle_mu_);
  if (running()) return absl::FailedPreconditionError("fake kubelet: already running");
  return StartLocked();
}

absl::Status FakeKubelet::Restart() {
  absl::MutexLock lifecycle(&lifecycle_mu_);
  if (!running()) return absl::FailedPreconditionError("fake kubelet: restart while stopped");
  StopLocked();
  std::vector<std::string> names;
  {
    absl::MutexLock lock(&mu_);
    ++restarts_;
    for (auto& [name, state] : resources_) {
      state.info.devices.clear();
      Recount(state.info);
      names.push_back(name);
    }
  }
  for (const std::string& name : names) PatchNode(name);
  return StartLocked();
}

void FakeKubelet::Stop() {
  absl::MutexLock lifecycle(&lifecycle_mu_);
  if (running()) StopLocked();
}

bool FakeKubelet::running() const {
  absl::MutexLock lock(&mu_);
  return running_;
}

int64_t FakeKubelet::restarts() const {
  absl::MutexLock lock(&mu_);
  return restarts_;
}

fs::path FakeKubelet::registration_socket() const {
  return options_.device_plugin_dir / kKubeletSocketName;
}

absl::Status FakeKubelet::PrepareDirectories() {
  GPUOP_RETURN_IF_ERROR(CheckSocketPath(registration_socket(), "registration socket"));
  GPUOP_RETURN_IF_ERROR(MakeDirectory(options_.device_plugin_dir));
  const fs::path checkpoint = options_.device_plugin_dir / kKubeletCheckpointName;
  std::error_code ec;
  if (!fs::exists(checkpoint, ec)) {
    std::ofstream out(checkpoint);
    out << kEmptyCheckpoint;
    if (!out.flush()) {
      return absl::InternalError(
          absl::StrCat("fake kubelet: write checkpoint ", checkpoint.string()));
    }
  }
  const fs::path& pod_resources = options_.pod_resources_socket;
  if (pod_resources.empty()) return absl::OkStatus();
  GPUOP_RETURN_IF_ERROR(CheckSocketPath(pod_resources, "pod resources socket"));
  if (pod_resources.parent_path() == options_.device_plugin_dir) {
    return absl::InvalidArgumentError(
        absl::StrCat("fake kubelet: pod resources socket ", pod_resources.string(),
                     " lies in the device plugin directory, whose sockets every start deletes"));
  }
  return MakeDirectory(pod_resources.parent_path());
}

void FakeKubelet::DeleteSockets() {
  std::error_code ec;
  std::vector<fs::path> sockets;
  for (const fs::directory_entry& entry : fs::directory_iterator(options_.device_plugin_dir, ec)) {
    std::error_code type_ec;
    if (entry.path().filename() != kKubeletCheckpointName &&
        entry.symlink_status(type_ec).type() == fs::file_type::socket) {
      sockets.push_back(entry.path());
    }
  }
  for (const fs::path& socket : sockets) fs::remove(socket, ec);
}

absl::Status FakeKubelet::StartLocked() {
  GPUOP_RETURN_IF_ERROR(PrepareDirectories());
  DeleteSockets();
  {
    absl::MutexLock lock(&mu_);
    running_ = true;
    accepting_ = true;
  }
  registration_service_ = std::make_unique<RegistrationService>(*this);
  absl::StatusOr<std::unique_ptr<grpc::Server>> registration =
      Serve(registration_socket(), registration_service_.get());
  if (!registration.ok()) {
    StopLocked();
    return registration.status();
  }
  registration_server_ = *std::move(registration);
  if (options_.pod_resources_socket.empty()) return absl::OkStatus();
  pod_resources_service_ = std::make_unique<PodResourcesService>(*this);
  absl::StatusOr<std::unique_ptr<grpc::Server>> pod_resources =
      Serve(options_.pod_resources_socket, pod_resources_service_.get());
  if (!pod_resources.ok()) {
    StopLocked();
    return pod_resources.status();
  }
  pod_resources_server_ = *std::move(pod_resources);
  return absl::OkStatus();
}

void FakeKubelet::StopLocked() {
  {
    absl::MutexLock lock(&mu_);
    running_ = false;
    accepting_ = false;
    for (PluginCall* call : calls_) call->Cancel();
  }
  // Waits for Register handlers, whose dials were just cancelled.
  Shutdown(registration_server_);
  Shutdown(pod_resources_server_);
  registration_service_.reset();
  pod_resources_service_.reset();
  std::vector<std::shared_ptr<Endpoint>> endpoints;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [name, state] : resources_) {
      if (state.endpoint != nullptr) endpoints.push_back(std::move(state.endpoint));
      for (auto& replaced : state.replaced) endpoints.push_back(std::move(replaced));
      state.replaced.clear();
      state.info.connected = false;
    }
  }
  for (std::shared_ptr<Endpoint>& endpoint : endpoints) Retire(std::move(endpoint));
  std::error_code ec;
  fs::remove(registration_socket(), ec);
  if (!options_.pod_resources_socket.empty()) fs::remove(options_.pod_resources_socket, ec);
}

grpc::Status FakeKubelet::HandleRegister(const v1beta1::RegisterRequest& request) {
  for (const absl::Status& invalid : {ValidateDevicePluginVersion(request.version()),
                                      ValidateExtendedResourceName(request.resource_name()),
                                      ValidateDevicePluginEndpoint(request.endpoint())}) {
    if (!invalid.ok()) return ToGrpc(invalid);
  }
  const std::string& resource = request.resource_name();
  auto endpoint = std::make_shared<Endpoint>();
  endpoint->socket = (options_.device_plugin_dir / request.endpoint()).string();
  grpc::ChannelArguments args;
  args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, "localhost");
  endpoint->channel = grpc::CreateCustomChannel("unix:" + endpoint->socket,
                                                grpc::InsecureChannelCredentials(), args);
  endpoint->stub = v1beta1::DevicePlugin::NewStub(endpoint->channel);

  // The kubelet's blocking dial and GetDevicePluginOptions, under one deadline.
  v1beta1::DevicePluginOptions plugin_options;
  {
    PluginCall call(*this, options_.dial_timeout);
    call.context()->set_wait_for_ready(true);
    const grpc::Status status =
        endpoint->stub->GetDevicePluginOptions(call.context(), v1beta1::Empty(), &plugin_options);
    if (!status.ok()) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          absl::StrCat("failed to dial device plugin for ", resource, " at ",
                                       endpoint->socket, " and get its options (code ",
                                       status.error_code(), "): ", status.error_message()));
    }
  }
  std::vector<std::shared_ptr<Endpoint>> finished;
  {
    absl::MutexLock lock(&mu_);
    if (!accepting_) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "kubelet is shutting down");
    }
    ResourceState& state = resources_[resource];
    // The replaced registration's stream is not closed: it runs on, feeding the resource, and
    // its end will disconnect this registration (the kubelet's device manager does both).
    if (state.endpoint != nullptr) state.replaced.push_back(std::move(state.endpoint));
    std::erase_if(state.replaced, [&finished](std::shared_ptr<Endpoint>& old) {
      if (!old->done.load()) return false;
      finished.push_back(std::move(old));
      return true;
    });
    state.endpoint = endpoint;
    KubeletResource& info = state.info;
    info.name = resource;
    info.endpoint = request.endpoint();
    info.options = plugin_options;
    info.registered_options = request.options();
    info.connected = true;
    ++info.registrations;
    endpoint->watcher = std::jthread([this, resource, raw = endpoint.get()](std::stop_token stop) {
      Watch(std::move(stop), resource, raw);
    });
  }
  for (std::shared_ptr<Endpoint>& old : finished) Retire(std::move(old));
  return grpc::Status::OK;
}

void FakeKubelet::Watch(std::stop_token stop, std::string resource, Endpoint* endpoint) {
  grpc::ClientContext context;
  std::stop_callback cancel(stop, [&context] { context.TryCancel(); });
  std::unique_ptr<grpc::ClientReader<v1beta1::ListAndWatchResponse>> reader =
      endpoint->stub->ListAndWatch(&context, v1beta1::Empty());
  v1beta1::ListAndWatchResponse response;
  while (reader->Read(&response)) {
    if (!ApplyDeviceList(resource, endpoint, response)) {
      context.TryCancel();
      break;
    }
    PatchNode(resource);
  }
  (void)reader->Finish();
  if (EndStream(resource)) PatchNode(resource);
  endpoint->done.store(true);
}

bool FakeKubelet::ApplyDeviceList(absl::string_view resource, const Endpoint* endpoint,
                                  const v1beta1::ListAndWatchResponse& response) {
  absl::MutexLock lock(&mu_);
  auto it = resources_.find(resource);
  if (it == resources_.end()) return false;
  // Any open stream of the resource sets its devices, a replaced registration's too: the
  // kubelet files messages under the resource name, not the connection.
  const ResourceState& state = it->second;
  const bool open = state.endpoint.get() == endpoint ||
                    std::any_of(state.replaced.begin(), state.replaced.end(),
                                [endpoint](const auto& old) { return old.get() == endpoint; });
  if (!open || endpoint->closed.load()) return false;
  KubeletResource& info = it->second.info;
  info.devices.clear();
  for (const v1beta1::Device& device : response.devices()) {
    KubeletDevice& seen = info.devices.emplace_back();
    seen.id = device.id();
    seen.healthy = device.health() == kDeviceHealthy;
    for (const v1beta1::NUMANode& node : device.topology().nodes()) {
      seen.numa_nodes.push_back(node.id());
    }
  }
  Recount(info);
  ++info.list_and_watch_messages;
  return true;
}

// The kubelet's answer to the end of any stream of the resource: it disconnects whichever
// registration is current, even when the stream that ended belongs to a replaced one.
bool FakeKubelet::EndStream(absl::string_view resource) {
  absl::MutexLock lock(&mu_);
  auto it = resources_.find(resource);
  if (it == resources_.end()) return false;
  return DisconnectLocked(it->second);
}

bool FakeKubelet::DisconnectLocked(ResourceState& state) {
  if (state.endpoint == nullptr || !state.info.connected) return false;
  KubeletResource& info = state.info;
  info.connected = false;
  for (KubeletDevice& device : info.devices) device.healthy = false;
  Recount(info);
  ++info.stream_ends;
  // Closing the connection ends the plugin's stream; the watcher is joined later.
  state.endpoint->closed.store(true);
  state.endpoint->watcher.request_stop();
  state.replaced.push_back(std::move(state.endpoint));
  return true;
}

absl::Status FakeKubelet::DisconnectPlugin(absl::string_view resource) {
  {
    absl::MutexLock lock(&mu_);
    auto it = resources_.find(resource);
    if (it == resources_.end()) {
      return absl::NotFoundError(
          absl::StrCat("resource ", resource, " is not registered with the kubelet"));
    }
    if (!DisconnectLocked(it->second)) {
      return absl::FailedPreconditionError(
          absl::StrCat("no device plugin is connected for ", resource));
    }
  }
  PatchNode(std::string(resource));
  return absl::OkStatus();
}

void FakeKubelet::Retire(std::shared_ptr<Endpoint> endpoint) {
  if (endpoint == nullptr) return;
  endpoint->watcher.request_stop();
  if (endpoint->watcher.joinable()) endpoint->watcher.join();
}

void FakeKubelet::PatchNode(const std::string& resource) {
  if (options_.kube_client == nullptr || options_.node_name.empty()) return;
  absl::MutexLock order(&patch_mu_);
  int64_t capacity = 0;
  int64_t allocatable = 0;
  {
    absl::MutexLock lock(&mu_);
    auto it = resources_.find(resource);
    if (it == resources_.end()) return;
    capacity = it->second.info.capacity;
    allocatable = it->second.info.allocatable;
  }
  const kube::Json patch = {{"status",
                             {{"capacity", {{resource, std::to_string(capacity)}}},
                              {"allocatable", {{resource, std::to_string(allocatable)}}}}}};
  absl::Status status =
      options_.kube_client
          ->Patch(kube::resources::kNodes, "", options_.node_name, kube::PatchType::kMergePatch,
                  patch, {.field_manager = "kubelet", .subresource = "status"})
          .status();
  absl::MutexLock lock(&mu_);
  ++node_patches_;
  last_node_patch_ = std::move(status);
}

}  // namespace gpuop::fakes
