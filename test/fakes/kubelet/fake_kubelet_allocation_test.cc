// Driving a plugin through the fake kubelet (Allocate, GetPreferredAllocation,
// PreStartContainer), the pod allocator, and PodResources read over gRPC.

#include <set>

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "test/fakes/kubelet/fake_kubelet_test_util.h"

namespace gpuop::fakes {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

constexpr char kGpu[] = "example.com/gpu";

std::vector<std::string> Ids(const google::protobuf::RepeatedPtrField<std::string>& ids) {
  return {ids.begin(), ids.end()};
}

class FakeKubeletAllocationTest : public FakeKubeletTestBase {
 protected:
  // A registered plugin with four healthy devices, two on each NUMA node.
  std::unique_ptr<TestDevicePlugin> RegisterPlugin(bool preferred, bool pre_start) {
    v1beta1::DevicePluginOptions options;
    options.set_get_preferred_allocation_available(preferred);
    options.set_pre_start_required(pre_start);
    auto plugin = ServePlugin(options);
    plugin->SetDevices({MakeDevice("gpu-0", true, 0), MakeDevice("gpu-1", true, 0),
                        MakeDevice("gpu-2", true, 1), MakeDevice("gpu-3", true, 1)});
    EXPECT_TRUE(plugin->Register(kubelet_->registration_socket()).ok());
    EXPECT_TRUE(kubelet_->WaitForHealthyDevices(kGpu, 4, kWait).ok());
    return plugin;
  }

  absl::StatusOr<PodAllocation> Admit(const std::string& ns, const std::string& pod,
                                      const std::string& container, int count) {
    return kubelet_->AllocatePod({.pod_namespace = ns,
                                  .pod_name = pod,
                                  .container = container,
                                  .resource = kGpu,
                                  .count = count});
  }

  v1::ListPodResourcesResponse List() {
    v1::ListPodResourcesResponse response;
    grpc::ClientContext context;
    const grpc::Status status =
        PodResourcesClient()->List(&context, v1::ListPodResourcesRequest(), &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }

  v1::AllocatableResourcesResponse AllocatableResources() {
    v1::AllocatableResourcesResponse response;
    grpc::ClientContext context;
    const grpc::Status status = PodResourcesClient()->GetAllocatableResources(
        &context, v1::AllocatableResourcesRequest(), &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }
};

TEST_F(FakeKubeletAllocationTest, AllocateRoundTrip) {
  StartKubelet();
  auto plugin = RegisterPlugin(false, false);
  absl::StatusOr<v1beta1::AllocateResponse> response =
      kubelet_->Allocate(kGpu, {{"gpu-0", "gpu-1"}, {"gpu-3"}});
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->container_responses_size(), 2);
  EXPECT_EQ(response->container_responses(0).envs().at("TEST_DEVICES"), "gpu-0,gpu-1");
  EXPECT_EQ(response->container_responses(1).devices(0).host_path(), "/dev/gpu-3");
  ASSERT_EQ(plugin->allocate_requests().size(), 1u);
  EXPECT_THAT(Ids(plugin->allocate_requests()[0].container_requests(1).devices_ids()),
              ElementsAre("gpu-3"));

  plugin->FailAllocate(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "gpu-0 is busy"));
  response = kubelet_->Allocate(kGpu, {{"gpu-0"}});
  EXPECT_EQ(response.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(response.status().message()), HasSubstr("Allocate example.com/gpu"));
  EXPECT_THAT(std::string(response.status().message()), HasSubstr("gpu-0 is busy"));

  EXPECT_EQ(kubelet_->Allocate("example.com/none", {{"x"}}).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(FakeKubeletAllocationTest, GetPreferredAllocationRoundTrip) {
  StartKubelet();
  auto plugin = RegisterPlugin(true, false);
  absl::StatusOr<v1beta1::PreferredAllocationResponse> response =
      kubelet_->GetPreferredAllocation(kGpu, {"gpu-0", "gpu-1", "gpu-2"}, {"gpu-0"}, 2);
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->container_responses_size(), 1);
  EXPECT_THAT(Ids(response->container_responses(0).deviceids()), ElementsAre("gpu-2", "gpu-1"));
  const std::vector<v1beta1::PreferredAllocationRequest> requests = plugin->preferred_requests();
  ASSERT_EQ(requests.size(), 1u);
  const v1beta1::ContainerPreferredAllocationRequest& sent = requests[0].container_requests(0);
  EXPECT_THAT(Ids(sent.available_deviceids()), ElementsAre("gpu-0", "gpu-1", "gpu-2"));
  EXPECT_THAT(Ids(sent.must_include_deviceids()), ElementsAre("gpu-0"));
  EXPECT_EQ(sent.allocation_size(), 2);
}

TEST_F(FakeKubeletAllocationTest, OptionalCallsFollowThePluginsOptions) {
  StartKubelet();
  auto plugin = RegisterPlugin(false, false);
  EXPECT_EQ(kubelet_->GetPreferredAllocation(kGpu, {"gpu-0"}, {}, 1).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(kubelet_->PreStartContainer(kGpu, {"gpu-0"}).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(plugin->preferred_requests().empty());
  EXPECT_TRUE(plugin->pre_start_requests().empty());

  auto requiring = ServePlugin(
      [] {
        v1beta1::DevicePluginOptions options;
        options.set_pre_start_required(true);
        return options;
      }(),
      "requiring.sock", "example.com/fpga");
  GPUOP_ASSERT_OK(requiring->Register(kubelet_->registration_socket()));
  GPUOP_ASSERT_OK(kubelet_->PreStartContainer("example.com/fpga", {"fpga-0"}));
  ASSERT_EQ(requiring->pre_start_requests().size(), 1u);
  EXPECT_THAT(Ids(requiring->pre_start_requests()[0].devices_ids()), ElementsAre("fpga-0"));
}

TEST_F(FakeKubeletAllocationTest, AllocatorTakesThePluginsPreferenceAndReportsPodResources) {
  StartKubelet();
  auto plugin = RegisterPlugin(true, true);
  absl::StatusOr<PodAllocation> allocation = kubelet_->AllocatePod({.pod_namespace = "ml",
                                                                    .pod_name = "train",
                                                                    .container = "main",
                                                                    .resource = kGpu,
                                                                    .count = 2});
  ASSERT_TRUE(allocation.ok()) << allocation.status();
  // The test plugin prefers the last available devices.
  EXPECT_THAT(allocation->device_ids, ElementsAre("gpu-3", "gpu-2"));
  EXPECT_EQ(allocation->response.envs().at("TEST_DEVICES"), "gpu-3,gpu-2");
  EXPECT_THAT(plugin->events(),
              testing::IsSupersetOf({"GetPreferredAllocation", "Allocate", "PreStartContainer"}));
  EXPECT_THAT(Ids(plugin->pre_start_requests().at(0).devices_ids()), ElementsAre("gpu-3", "gpu-2"));
  EXPECT_THAT(kubelet_->AllocatedDevices(kGpu), ElementsAre("gpu-2", "gpu-3"));

  const v1::ListPodResourcesResponse list = List();
  ASSERT_EQ(list.pod_resources_size(), 1);
  const v1::PodResources& pod = list.pod_resources(0);
  EXPECT_EQ(pod.namespace_(), "ml");
  EXPECT_EQ(pod.name(), "train");
  ASSERT_EQ(pod.containers_size(), 1);
  EXPECT_EQ(pod.containers(0).name(), "main");
  ASSERT_EQ(pod.containers(0).devices_size(), 1);
  const v1::ContainerDevices& devices = pod.containers(0).devices(0);
  EXPECT_EQ(devices.resource_name(), kGpu);
  EXPECT_THAT(Ids(devices.device_ids()), ElementsAre("gpu-3", "gpu-2"));
  ASSERT_EQ(devices.topology().nodes_size(), 1);
  EXPECT_EQ(devices.topology().nodes(0).id(), 1);

  v1::GetPodResourcesRequest get;
  get.set_pod_namespace("ml");
  get.set_pod_name("train");
  v1::GetPodResourcesResponse one;
  grpc::ClientContext context;
  ASSERT_TRUE(PodResourcesClient()->Get(&context, get, &one).ok());
  EXPECT_EQ(one.pod_resources().SerializeAsString(), pod.SerializeAsString());
  get.set_pod_name("absent");
  grpc::ClientContext absent_context;
  const grpc::Status absent = PodResourcesClient()->Get(&absent_context, get, &one);
  EXPECT_EQ(absent.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(absent.error_message(), HasSubstr("pod absent in namespace ml not found"));

  const v1::AllocatableResourcesResponse allocatable = AllocatableResources();
  ASSERT_EQ(allocatable.devices_size(), 4);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(allocatable.devices(i).resource_name(), kGpu);
    EXPECT_THAT(Ids(allocatable.devices(i).device_ids()), ElementsAre("gpu-" + std::to_string(i)));
    EXPECT_EQ(allocatable.devices(i).topology().nodes(0).id(), i / 2);
  }
}

TEST_F(FakeKubeletAllocationTest, ThePluginIsAskedOnlyWithAChoiceAndWithCandidatesUnordered) {
  StartKubelet();
  auto plugin = RegisterPlugin(true, true);
  // Four free, one asked: a choice. Over several admissions the candidates arrive in more than
  // one order (the kubelet's sets are unordered).
  std::set<std::vector<std::string>> orders;
  for (int i = 0; i < 12; ++i) {
    const std::string pod = absl::StrCat("p", i);
    ASSERT_TRUE(Admit("default", pod, "c", 1).ok());
    const auto requests = plugin->preferred_requests();
    ASSERT_EQ(requests.size(), static_cast<size_t>(i + 1));
    const auto& request = requests.back().container_requests(0);
    EXPECT_THAT(Ids(request.available_deviceids()),
                UnorderedElementsAre("gpu-0", "gpu-1", "gpu-2", "gpu-3"));
    orders.insert(Ids(request.available_deviceids()));
    GPUOP_ASSERT_OK(kubelet_->ReleasePod("default", pod));
  }
  EXPECT_GT(orders.size(), 1u);
  // Exactly as many free as asked: no choice, no call.
  ASSERT_TRUE(Admit("default", "all", "c", 4).ok());
  EXPECT_EQ(plugin->preferred_requests().size(), 12u);
}

TEST_F(FakeKubeletAllocationTest, PreStartContainerRunsAtEveryStartOfTheContainer) {
  StartKubelet();
  auto plugin = RegisterPlugin(false, true);
  ASSERT_TRUE(Admit("ml", "train", "main", 2).ok());
  ASSERT_EQ(plugin->pre_start_requests().size(), 1u);
  GPUOP_ASSERT_OK(kubelet_->StartContainer("ml", "train", "main"));  // a restart
  ASSERT_EQ(plugin->pre_start_requests().size(), 2u);
  EXPECT_EQ(Ids(plugin->pre_start_requests()[1].devices_ids()),
            Ids(plugin->pre_start_requests()[0].devices_ids()));
  EXPECT_EQ(kubelet_->StartContainer("ml", "train", "sidecar").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(kubelet_->StartContainer("ml", "absent", "main").code(), absl::StatusCode::kNotFound);
}

TEST_F(FakeKubeletAllocationTest, AllocatorSkipsUnhealthyAndHeldDevicesAndReleaseFreesThem) {
  StartKubelet();
  auto plugin = ServePlugin();
  plugin->SetDevices({MakeDevice("gpu-0"), MakeDevice("gpu-1", false), MakeDevice("gpu-2")});
  GPUOP_ASSERT_OK(plugin->Register(kubelet_->registration_socket()));
  GPUOP_ASSERT_OK(kubelet_->WaitForHealthyDevices(kGpu, 2, kWait));
  // PodResources' allocatable devices are the healthy ones.
  const v1::AllocatableResourcesResponse allocatable = AllocatableResources();
  ASSERT_EQ(allocatable.devices_size(), 2);
  EXPECT_THAT(Ids(allocatable.devices(1).device_ids()), ElementsAre("gpu-2"));
  const auto request = [](const std::string& pod, int count) {
    return PodDeviceRequest{.pod_namespace = "default",
                            .pod_name = pod,
                            .container = "c",
                            .resource = kGpu,
                            .count = count};
  };

  absl::StatusOr<PodAllocation> a = kubelet_->AllocatePod(request("a", 1));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(a->device_ids, ElementsAre("gpu-0"));
  absl::StatusOr<PodAllocation> b = kubelet_->AllocatePod(request("b", 1));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_THAT(b->device_ids, ElementsAre("gpu-2"));  // gpu-1 is unhealthy
  const absl::Status exhausted = kubelet_->AllocatePod(request("c", 1)).status();
  EXPECT_EQ(exhausted.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(exhausted.message()), HasSubstr("default/c"));
  EXPECT_EQ(kubelet_->AllocatePod(request("a", 1)).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(kubelet_->AllocatePod(request("d", 0)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(List().pod_resources_size(), 2);

  GPUOP_ASSERT_OK(kubelet_->ReleasePod("default", "a"));
  EXPECT_THAT(kubelet_->AllocatedDevices(kGpu), ElementsAre("gpu-2"));
  absl::StatusOr<PodAllocation> c = kubelet_->AllocatePod(request("c", 1));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->device_ids, ElementsAre("gpu-0"));
  EXPECT_EQ(kubelet_->ReleasePod("default", "a").code(), absl::StatusCode::kNotFound);

  const v1::ListPodResourcesResponse list = List();
  ASSERT_EQ(list.pod_resources_size(), 2);  // sorted by namespace and name
  EXPECT_EQ(list.pod_resources(0).name(), "b");
  EXPECT_EQ(list.pod_resources(1).name(), "c");
  EXPECT_FALSE(list.pod_resources(1).containers(0).devices(0).has_topology());
}

TEST_F(FakeKubeletAllocationTest, AllocatorHoldsNothingAfterAFailedAllocate) {
  StartKubelet();
  auto plugin = RegisterPlugin(false, false);
  plugin->FailAllocate(grpc::Status(grpc::StatusCode::INTERNAL, "driver fell over"));
  const absl::Status failed = kubelet_
                                  ->AllocatePod({.pod_namespace = "ns",
                                                 .pod_name = "p",
                                                 .container = "c",
                                                 .resource = kGpu,
                                                 .count = 4})
                                  .status();
  EXPECT_EQ(failed.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(failed.message()), HasSubstr("admit pod ns/p container c"));
  EXPECT_THAT(std::string(failed.message()), HasSubstr("driver fell over"));
  EXPECT_THAT(kubelet_->AllocatedDevices(kGpu), IsEmpty());
  EXPECT_EQ(List().pod_resources_size(), 0);

  plugin->FailAllocate(grpc::Status::OK);
  absl::StatusOr<PodAllocation> retried = kubelet_->AllocatePod(
      {.pod_namespace = "ns", .pod_name = "p", .container = "c", .resource = kGpu, .count = 4});
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_THAT(retried->device_ids, ElementsAre("gpu-0", "gpu-1", "gpu-2", "gpu-3"));
}

}  // namespace
}  // namespace gpuop::fakes
