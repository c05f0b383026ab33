// Calls into plugins, the device allocator and the PodResources service of the fake kubelet.

#include <algorithm>
#include <map>
#include <random>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "test/fakes/kubelet/fake_kubelet.h"
#include "test/fakes/kubelet/fake_kubelet_internal.h"

namespace gpuop::fakes {
namespace {

bool Contains(const std::vector<std::string>& ids, const std::string& id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

absl::Status Annotate(const absl::Status& status, absl::string_view what) {
  return absl::Status(status.code(), absl::StrCat(what, ": ", status.message()));
}

}  // namespace

absl::StatusOr<FakeKubelet::Connected> FakeKubelet::Connection(absl::string_view resource) const {
  absl::MutexLock lock(&mu_);
  auto it = resources_.find(resource);
  if (it == resources_.end()) {
    return absl::NotFoundError(
        absl::StrCat("resource ", resource, " is not registered with the kubelet"));
  }
  const ResourceState& state = it->second;
  if (!state.info.connected || state.endpoint == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("no device plugin is connected for ", resource,
                     " (its stream ended or the kubelet restarted; it must register again)"));
  }
  return Connected{.endpoint = state.endpoint, .options = state.info.options};
}

absl::StatusOr<v1beta1::AllocateResponse> FakeKubelet::Allocate(
    absl::string_view resource, const std::vector<std::vector<std::string>>& container_requests) {
  GPUOP_ASSIGN_OR_RETURN(const Connected connected, Connection(resource));
  v1beta1::AllocateRequest request;
  for (const std::vector<std::string>& ids : container_requests) {
    v1beta1::ContainerAllocateRequest* container = request.add_container_requests();
    for (const std::string& id : ids) container->add_devices_ids(id);
  }
  v1beta1::AllocateResponse response;
  PluginCall call(*this, options_.call_timeout);
  const grpc::Status status =
      connected.endpoint->stub->Allocate(call.context(), request, &response);
  if (!status.ok()) {
    return FromGrpc(status,
                    absl::StrCat("Allocate ", resource, " at ", connected.endpoint->socket));
  }
  return response;
}

absl::StatusOr<v1beta1::PreferredAllocationResponse> FakeKubelet::GetPreferredAllocation(
    absl::string_view resource, const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int32_t size) {
  GPUOP_ASSIGN_OR_RETURN(const Connected connected, Connection(resource));
  if (!connected.options.get_preferred_allocation_available()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the device plugin for ", resource, " does not offer GetPreferredAllocation"));
  }
  v1beta1::PreferredAllocationRequest request;
  v1beta1::ContainerPreferredAllocationRequest* container = request.add_container_requests();
  for (const std::string& id : available) container->add_available_deviceids(id);
  for (const std::string& id : must_include) container->add_must_include_deviceids(id);
  container->set_allocation_size(size);
  v1beta1::PreferredAllocationResponse response;
  PluginCall call(*this, options_.call_timeout);
  const grpc::Status status =
      connected.endpoint->stub->GetPreferredAllocation(call.context(), request, &response);
  if (!status.ok()) {
    return FromGrpc(status, absl::StrCat("GetPreferredAllocation ", resource, " at ",
                                         connected.endpoint->socket));
  }
  return response;
}

absl::Status FakeKubelet::PreStartContainer(absl::string_view resource,
                                            const std::vector<std::string>& device_ids) {
  GPUOP_ASSIGN_OR_RETURN(const Connected connected, Connection(resource));
  if (!connected.options.pre_start_required()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the device plugin for ", resource, " does not require PreStartContainer"));
  }
  v1beta1::PreStartContainerRequest request;
  for (const std::string& id : device_ids) request.add_devices_ids(id);
  v1beta1::PreStartContainerResponse response;
  PluginCall call(*this, options_.pre_start_timeout);
  const grpc::Status status =
      connected.endpoint->stub->PreStartContainer(call.context(), request, &response);
  if (!status.ok()) {
    return FromGrpc(
        status, absl::StrCat("PreStartContainer ", resource, " at ", connected.endpoint->socket));
  }
  return absl::OkStatus();
}

absl::StatusOr<PodAllocation> FakeKubelet::AllocatePod(const PodDeviceRequest& request) {
  const std::string& resource = request.resource;
  const std::string what =
      absl::StrCat("admit pod ", request.pod_namespace, "/", request.pod_name, " container ",
                   request.container, " with ", request.count, " ", resource);
  if (request.count < 1) return absl::InvalidArgumentError(what + ": count must be at least 1");
  const PodKey key{request.pod_namespace, request.pod_name};
  const auto holds = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    auto pod = pods_.find(key);
    if (pod == pods_.end()) return false;
    for (const ContainerRecord& container : pod->second) {
      if (container.name != request.container) continue;
      for (const ContainerDevices& devices : container.devices) {
        if (devices.resource == resource) return true;
      }
    }
    return false;
  };
  const auto already = [&] { return absl::AlreadyExistsError(what + ": the container has them"); };

  GPUOP_ASSIGN_OR_RETURN(const Connected connected, Connection(resource));
  std::vector<std::string> free;
  {
    absl::MutexLock lock(&mu_);
    if (holds()) return already();
    auto it = resources_.find(resource);
    const auto& taken = allocated_[resource];
    for (const KubeletDevice& device : it->second.info.devices) {
      if (device.healthy && !taken.contains(device.id)) free.push_back(device.id);
    }
  }
  const size_t count = static_cast<size_t>(request.count);
  if (free.size() < count) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what, ": only ", free.size(), " free healthy devices"));
  }

  // As the device manager does: the plugin is asked only when there is a choice (more free
  // devices than needed), with the candidates in no particular order (Go sets); its preference
  // within what is free comes first, then the rest.
  std::vector<std::string> chosen;
  if (connected.options.get_preferred_allocation_available() && free.size() > count) {
    std::vector<std::string> available = free;
    {
      absl::MutexLock lock(&mu_);
      std::shuffle(available.begin(), available.end(), random_);
    }
    absl::StatusOr<v1beta1::PreferredAllocationResponse> preferred =
        GetPreferredAllocation(resource, available, {}, request.count);
    if (!preferred.ok()) return Annotate(preferred.status(), what);
    if (preferred->container_responses_size() > 0) {
      for (const std::string& id : preferred->container_responses(0).deviceids()) {
        if (chosen.size() < count && Contains(free, id) && !Contains(chosen, id)) {
          chosen.push_back(id);
        }
      }
    }
  }
  for (const std::string& id : free) {
    if (chosen.size() == count) break;
    if (!Contains(chosen, id)) chosen.push_back(id);
  }
  {
    absl::MutexLock lock(&mu_);
    auto& taken = allocated_[resource];
    for (const std::string& id : chosen) {
      if (taken.contains(id)) {
        return absl::AbortedError(absl::StrCat(what, ": device ", id, " was taken meanwhile"));
      }
    }
    taken.insert(chosen.begin(), chosen.end());
  }

  absl::StatusOr<v1beta1::AllocateResponse> response = Allocate(resource, {chosen});
  absl::Status failure;
  if (!response.ok()) {
    failure = Annotate(response.status(), what);
  } else if (response->container_responses_size() == 0) {
    failure = absl::InternalError(what + ": Allocate answered no container response");
  } else if (connected.options.pre_start_required()) {
    // The first start of the container (StartContainer calls it again for each restart).
    if (absl::Status started = PreStartContainer(resource, chosen); !started.ok()) {
      failure = Annotate(started, what);
    }
  }
  if (!failure.ok()) {
    Unreserve(resource, chosen);
    return failure;
  }

  absl::MutexLock lock(&mu_);
  if (holds()) {
    for (const std::string& id : chosen) allocated_[resource].erase(id);
    return already();
  }
  ContainerDevices record{.resource = resource};
  const std::vector<KubeletDevice>& known = resources_.find(resource)->second.info.devices;
  for (const std::string& id : chosen) {
    auto device = std::find_if(known.begin(), known.end(),
                               [&id](const KubeletDevice& d) { return d.id == id; });
    record.devices.push_back(device != known.end() ? *device : KubeletDevice{.id = id});
  }
  std::vector<ContainerRecord>& containers = pods_[key];
  auto container =
      std::find_if(containers.begin(), containers.end(),
                   [&request](const ContainerRecord& c) { return c.name == request.container; });
  if (container == containers.end()) {
    container = containers.insert(containers.end(), ContainerRecord{.name = request.container});
  }
  container->devices.push_back(std::move(record));
  return PodAllocation{.device_ids = chosen, .response = response->container_responses(0)};
}

absl::Status FakeKubelet::StartContainer(absl::string_view pod_namespace,
                                         absl::string_view pod_name, absl::string_view container) {
  const std::string what =
      absl::StrCat("start container ", container, " of pod ", pod_namespace, "/", pod_name);
  std::vector<std::pair<std::string, std::vector<std::string>>> held;
  {
    absl::MutexLock lock(&mu_);
    auto pod = pods_.find(PodKey{std::string(pod_namespace), std::string(pod_name)});
    if (pod == pods_.end()) return absl::NotFoundError(what + ": the pod is unknown");
    auto record =
        std::find_if(pod->second.begin(), pod->second.end(),
                     [container](const ContainerRecord& c) { return c.name == container; });
    if (record == pod->second.end())
      return absl::NotFoundError(what + ": the container is unknown");
    for (const ContainerDevices& devices : record->devices) {
      std::vector<std::string> ids;
      for (const KubeletDevice& device : devices.devices) ids.push_back(device.id);
      held.emplace_back(devices.resource, std::move(ids));
    }
  }
  for (const auto& [resource, ids] : held) {
    GPUOP_ASSIGN_OR_RETURN(const Connected connected, Connection(resource));
    if (!connected.options.pre_start_required()) continue;
    if (absl::Status started = PreStartContainer(resource, ids); !started.ok()) {
      return Annotate(started, what);
    }
  }
  return absl::OkStatus();
}

void FakeKubelet::Unreserve(const std::string& resource, const std::vector<std::string>& ids) {
  absl::MutexLock lock(&mu_);
  for (const std::string& id : ids) allocated_[resource].erase(id);
}

absl::Status FakeKubelet::ReleasePod(absl::string_view pod_namespace, absl::string_view pod_name) {
  absl::MutexLock lock(&mu_);
  auto pod = pods_.find(PodKey{std::string(pod_namespace), std::string(pod_name)});
  if (pod == pods_.end()) {
    return absl::NotFoundError(
        absl::StrCat("release pod ", pod_namespace, "/", pod_name, ": it holds no devices"));
  }
  for (const ContainerRecord& container : pod->second) {
    for (const ContainerDevices& devices : container.devices) {
      for (const KubeletDevice& device : devices.devices) {
        allocated_[devices.resource].erase(device.id);
      }
    }
  }
  pods_.erase(pod);
  return absl::OkStatus();
}

namespace {

void SetTopology(int64_t node, v1::ContainerDevices* out) {
  out->mutable_topology()->add_nodes()->set_id(node);
}

}  // namespace

// Like the kubelet, a container's devices of one resource are reported grouped by NUMA node
// (a device on several nodes in each group); devices without topology in one group without.
grpc::Status FakeKubelet::PodResourcesService::List(grpc::ServerContext*,
                                                    const v1::ListPodResourcesRequest*,
                                                    v1::ListPodResourcesResponse* response) {
  absl::MutexLock lock(&kubelet_.mu_);
  for (const auto& [key, containers] : kubelet_.pods_) {
    v1::PodResources* pod = response->add_pod_resources();
    pod->set_namespace_(key.first);
    pod->set_name(key.second);
    for (const ContainerRecord& record : containers) {
      v1::ContainerResources* container = pod->add_containers();
      container->set_name(record.name);
      for (const ContainerDevices& devices : record.devices) {
        std::map<int64_t, std::vector<std::string>> by_node;
        std::vector<std::string> no_topology;
        for (const KubeletDevice& device : devices.devices) {
          if (device.numa_nodes.empty()) no_topology.push_back(device.id);
          for (int64_t node : device.numa_nodes) by_node[node].push_back(device.id);
        }
        for (const auto& [node, ids] : by_node) {
          v1::ContainerDevices* out = container->add_devices();
          out->set_resource_name(devices.resource);
          for (const std::string& id : ids) out->add_device_ids(id);
          SetTopology(node, out);
        }
        if (!no_topology.empty()) {
          v1::ContainerDevices* out = container->add_devices();
          out->set_resource_name(devices.resource);
          for (const std::string& id : no_topology) out->add_device_ids(id);
        }
      }
    }
  }
  return grpc::Status::OK;
}

grpc::Status FakeKubelet::PodResourcesService::Get(grpc::ServerContext* context,
                                                   const v1::GetPodResourcesRequest* request,
                                                   v1::GetPodResourcesResponse* response) {
  v1::ListPodResourcesResponse all;
  if (grpc::Status status = List(context, nullptr, &all); !status.ok()) return status;
  for (v1::PodResources& pod : *all.mutable_pod_resources()) {
    if (pod.namespace_() == request->pod_namespace() && pod.name() == request->pod_name()) {
      *response->mutable_pod_resources() = std::move(pod);
      return grpc::Status::OK;
    }
  }
  return grpc::Status(grpc::StatusCode::NOT_FOUND,
                      absl::StrCat("pod ", request->pod_name(), " in namespace ",
                                   request->pod_namespace(), " not found"));
}

// The healthy devices the plugins listed (the kubelet's GetAllocatableDevices filters by
// health), one entry per device and NUMA node.
grpc::Status FakeKubelet::PodResourcesService::GetAllocatableResources(
    grpc::ServerContext*, const v1::AllocatableResourcesRequest*,
    v1::AllocatableResourcesResponse* response) {
  absl::MutexLock lock(&kubelet_.mu_);
  for (const auto& [name, state] : kubelet_.resources_) {
    for (const KubeletDevice& device : state.info.devices) {
      if (!device.healthy) continue;
      if (device.numa_nodes.empty()) {
        v1::ContainerDevices* out = response->add_devices();
        out->set_resource_name(name);
        out->add_device_ids(device.id);
      }
      for (int64_t node : device.numa_nodes) {
        v1::ContainerDevices* out = response->add_devices();
        out->set_resource_name(name);
        out->add_device_ids(device.id);
        SetTopology(node, out);
      }
    }
  }
  return grpc::Status::OK;
}

}  // namespace gpuop::fakes
