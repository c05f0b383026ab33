// Registration, ListAndWatch, Node status and shutdown of the fake kubelet, against a real
// device plugin server.

#include <algorithm>
#include <filesystem>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/fakes/kubelet/fake_kubelet_test_util.h"

namespace gpuop::fakes {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kGpu[] = "example.com/gpu";

class FakeKubeletRegistrationTest : public FakeKubeletTestBase {};

TEST_F(FakeKubeletRegistrationTest, OptionsAreFetchedBeforeRegisterReturns) {
  StartKubelet();
  v1beta1::DevicePluginOptions options;
  options.set_get_preferred_allocation_available(true);
  auto plugin = ServePlugin(options);
  GPUOP_ASSERT_OK(plugin->Register(kubelet_->registration_socket()));

  const std::vector<std::string> events = plugin->events();
  auto fetched = std::find(events.begin(), events.end(), "GetDevicePluginOptions");
  auto returned = std::find(events.begin(), events.end(), "Register returned");
  ASSERT_NE(fetched, events.end());
  ASSERT_NE(returned, events.end());
  EXPECT_LT(fetched, returned);

  absl::StatusOr<KubeletResource> resource = kubelet_->Resource(kGpu);
  ASSERT_TRUE(resource.ok()) << resource.status();
  EXPECT_EQ(resource->endpoint, "test-gpu.sock");
  EXPECT_TRUE(resource->options.get_preferred_allocation_available());
  EXPECT_TRUE(resource->registered_options.get_preferred_allocation_available());
  EXPECT_TRUE(resource->connected);
  EXPECT_EQ(resource->registrations, 1);
  EXPECT_THAT(kubelet_->Resources(), ElementsAre(kGpu));
  GPUOP_ASSERT_OK(kubelet_->WaitForListAndWatchMessages(kGpu, 1, kWait));
  GPUOP_ASSERT_OK(plugin->WaitForOpenStreams(1, kWait));
}

TEST_F(FakeKubeletRegistrationTest, InvalidRegistrationsAreRejected) {
  StartKubelet();
  auto plugin = ServePlugin();
  struct Case {
    std::string field;
    std::string value;
    std::string message;
  };
  const Case cases[] = {
      {"version", "v1alpha1", "API version \"v1alpha1\" is not supported"},
      {"version", "", "API version \"\" is not supported"},
      {"resource", "gpu", "needs a domain prefix"},
      {"resource", "kubernetes.io/gpu", "kubernetes.io namespace is reserved"},
      {"resource", "k8s.io/gpu", "k8s.io namespace is reserved"},
      {"resource", "Example.com/gpu", "must be a DNS subdomain"},
      {"endpoint", "../test-gpu.sock", "not a path"},
      {"endpoint", (plugin_dir() / "test-gpu.sock").string(), "not a path"},
      {"endpoint", "", "empty"},
      {"endpoint", "kubelet.sock", "the kubelet's own file"},
  };
  for (const Case& c : cases) {
    v1beta1::RegisterRequest request = plugin->RegisterRequest();
    if (c.field == "version") request.set_version(c.value);
    if (c.field == "resource") request.set_resource_name(c.value);
    if (c.field == "endpoint") request.set_endpoint(c.value);
    const absl::Status status = plugin->RegisterWith(kubelet_->registration_socket(), request);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.field << "=" << c.value;
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.message)) << status;
  }
  EXPECT_TRUE(kubelet_->Resources().empty());
  const std::vector<std::string> events = plugin->events();
  EXPECT_EQ(std::count(events.begin(), events.end(), "GetDevicePluginOptions"), 0);
}

TEST_F(FakeKubeletRegistrationTest, UnreachablePluginFailsRegistration) {
  FakeKubeletOptions options = KubeletOptions();
  options.dial_timeout = absl::Milliseconds(300);
  StartKubelet(options);
  TestDevicePlugin absent({.dir = plugin_dir(), .endpoint = "absent.sock"});
  const absl::Status status = absent.Register(kubelet_->registration_socket());
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("failed to dial device plugin"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("absent.sock"));
  EXPECT_TRUE(kubelet_->Resources().empty());
}

TEST_F(FakeKubeletRegistrationTest, EveryListAndWatchMessageIsTheCompleteList) {
  StartKubelet();
  auto plugin = ServePlugin();
  plugin->SetDevices(
      {MakeDevice("gpu-0", true, 0), MakeDevice("gpu-1", true, 1), MakeDevice("gpu-2", true)});
  GPUOP_ASSERT_OK(plugin->Register(kubelet_->registration_socket()));
  GPUOP_ASSERT_OK(kubelet_->WaitForHealthyDevices(kGpu, 3, kWait));
  absl::StatusOr<KubeletResource> resource = kubelet_->Resource(kGpu);
  ASSERT_TRUE(resource.ok());
  EXPECT_THAT(resource->devices,
              ElementsAre(KubeletDevice{"gpu-0", true, {0}}, KubeletDevice{"gpu-1", true, {1}},
                          KubeletDevice{"gpu-2", true, {}}));
  EXPECT_EQ(kubelet_->Capacity(kGpu), 3);
  EXPECT_EQ(kubelet_->Allocatable(kGpu), 3);

  plugin->SetDevices(
      {MakeDevice("gpu-0", true, 0), MakeDevice("gpu-1", false, 1), MakeDevice("gpu-2", true)});
  GPUOP_ASSERT_OK(kubelet_->WaitForHealthyDevices(kGpu, 2, kWait));
  EXPECT_EQ(kubelet_->Capacity(kGpu), 3);
  resource = kubelet_->Resource(kGpu);
  ASSERT_TRUE(resource.ok());
  EXPECT_FALSE(resource->devices[1].healthy);

  // A device missing from a message is gone, not unhealthy.
  plugin->SetDevices({MakeDevice("gpu-0", true, 0)});
  GPUOP_ASSERT_OK(kubelet_->WaitUntil(
      kGpu, "list one device", [](const KubeletResource& r) { return r.capacity == 1; }, kWait));
  EXPECT_EQ(kubelet_->Allocatable(kGpu), 1);
  EXPECT_EQ(kubelet_->Resource(kGpu)->list_and_watch_messages, 3);
  EXPECT_EQ(kubelet_->Capacity("example.com/other"), 0);
}

TEST_F(FakeKubeletRegistrationTest, StreamEndMakesEveryDeviceUnhealthyUntilReregistration) {
  StartKubelet();
  auto plugin = ServePlugin();
  plugin->SetDevices({MakeDevice("gpu-0"), MakeDevice("gpu-1")});
  GPUOP_ASSERT_OK(plugin->Register(kubelet_->registration_socket()));
  GPUOP_ASSERT_OK(kubelet_->WaitForHealthyDevices(kGpu, 2, kWait));

  plugin->EndStreams();
  GPUOP_ASSERT_OK(kubelet_->WaitForDisconnected(kGpu, kWait));
  absl::StatusOr<KubeletResource> resource = kubelet_->Resource(kGpu);
  ASSERT_TRUE(resource.ok());
  EXPECT_EQ(resource->capacity, 2);
  EXPECT_EQ(resource->allocatable, 0);
  EXPECT_EQ(resource->stream_ends, 1);
  EXPECT_EQ(kubelet_->Allocate(kGpu, {{"gpu-0"}}).status().code(),
            absl::StatusCode::kFailedPrecondition);

  GPUOP_ASSERT_OK(plugin->Register(kubelet_->registration_socket()));
  GPUOP_ASSERT_OK(kubelet_->WaitForHealthyDevices(kGpu, 2, kWait));
  EXPECT_EQ(kubelet_->Resource(kGpu)->registrations, 2);
}

TEST_F(FakeKubeletRegistrationTest, ReregistrationReplacesTheEndpointAndLeavesTheOldStreamOpen) {
  StartKubelet();
  auto first = ServePlugin({}, "first.sock");
  first->SetDevices({MakeDevice("old-0")});
  GPUOP_ASSERT_OK(first->Register(kubelet_->registration_socket()));
  GPUOP_ASSERT_OK(kubelet_->WaitForHealthyDevices(kGpu, 1, kWait));

  v1beta1::DevicePluginOptions options;
  options.set_pre_start_required(true);
  auto second = ServePlugin(options, "second.sock");
  second->SetDevices({MakeDevice("new-0"), MakeDevice("new-1")});
  GPUOP_ASSERT_OK(second->Register(kubelet_->registration_socket()));
  GPUOP_ASSERT_OK(kubelet_->WaitForHealthyDevices(kGpu, 2, kWait));

  absl::StatusOr<KubeletResource> resource = kubelet_->Resource(kGpu);
  ASSERT_TRUE(resource.ok());
  EXPECT_EQ(resource->endpoint, "second.sock");
  EXPECT_TRUE(resource->options.pre_start_required());
  EXPECT_EQ(resource->devices[0].id, "new-0");
  absl::StatusOr<v1beta1::AllocateResponse> allocated = kubelet_->Allocate(kGpu, {{"new-0"}});
  ASSERT_TRUE(allocated.ok()) << allocated.status();
  EXPECT_TRUE(first->allocate_requests().empty());
  EXPECT_EQ(second->allocate_requests().size(), 1u);
  // The kubelet does not hang up on the replaced registration.
  EXPECT_EQ(first->open_streams(), 1);
}

TEST_F(FakeKubeletRegistrationTest, AnOldStreamEndingDisconnectsTheNewRegistration) {
  StartKubelet();
  auto first = ServePlugin({}, "first.sock");
  first->SetDevices({MakeDevice("gpu-0")});
  GPUOP_ASSERT_OK(first->Register(kubelet_->registration_socket()));
  GPUOP_ASSERT_OK(kubelet_->WaitForHealthyDevices(kGpu, 1, kWait));
  auto second = ServePlugin({}, "second.sock");
  second->SetDevices({MakeDevice("gpu-0")});
  GPUOP_ASSERT_OK(second->Register(kubelet_->registration_socket()));
  GPUOP_ASSERT_OK(second->WaitForOpenStreams(1, kWait));

  // The old stream ends after the new registration: the kubelet disconnects the current one.
  first->EndStreams();
  GPUOP_ASSERT_OK(kubelet_->WaitForDisconnected(kGpu, kWait));
  GPUOP_ASSERT_OK(second->WaitForOpenStreams(0, kWait));
  EXPECT_EQ(kubelet_->Allocatable(kGpu), 0);
  EXPECT_EQ(kubelet_->Resource(kGpu)->stream_ends, 1);
  EXPECT_EQ(kubelet_->Allocate(kGpu, {{"gpu-0"}}).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(FakeKubeletRegistrationTest, DisconnectPluginEndsTheStreamAndNothingReopensIt) {
  StartKubelet();
  auto plugin = ServePlugin();
  plugin->SetDevices({MakeDevice("gpu-0")});
  GPUOP_ASSERT_OK(plugin->Register(kubelet_->registration_socket()));
  GPUOP_ASSERT_OK(kubelet_->WaitForHealthyDevices(kGpu, 1, kWait));
  EXPECT_EQ(kubelet_->DisconnectPlugin("example.com/none").code(), absl::StatusCode::kNotFound);

  GPUOP_ASSERT_OK(kubelet_->DisconnectPlugin(kGpu));
  GPUOP_ASSERT_OK(plugin->WaitForOpenStreams(0, kWait));
  EXPECT_EQ(kubelet_->Allocatable(kGpu), 0);
  EXPECT_EQ(kubelet_->DisconnectPlugin(kGpu).code(), absl::StatusCode::kFailedPrecondition);
  plugin->SetDevices({MakeDevice("gpu-0"), MakeDevice("gpu-1")});
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(plugin->open_streams(), 0) << "the kubelet opened a stream again by itself";
  EXPECT_EQ(kubelet_->Capacity(kGpu), 1);

  GPUOP_ASSERT_OK(plugin->Register(kubelet_->registration_socket()));
  GPUOP_ASSERT_OK(kubelet_->WaitForHealthyDevices(kGpu, 2, kWait));
}

TEST_F(FakeKubeletRegistrationTest, WaitsReportWhatTheySawOnTimeout) {
  StartKubelet();
  const absl::Status unknown = kubelet_->WaitForHealthyDevices(kGpu, 1, absl::Milliseconds(50));
  EXPECT_EQ(unknown.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(unknown.message()), HasSubstr("it is unknown"));

  auto plugin = ServePlugin();
  plugin->SetDevices({MakeDevice("gpu-0")});
  GPUOP_ASSERT_OK(plugin->Register(kubelet_->registration_socket()));
  GPUOP_ASSERT_OK(kubelet_->WaitForHealthyDevices(kGpu, 1, kWait));
  const absl::Status status = kubelet_->WaitForHealthyDevices(kGpu, 4, absl::Milliseconds(50));
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(status.message()), HasSubstr("1 healthy of 1 devices"));
}

TEST_F(FakeKubeletRegistrationTest, StopIsPromptAndCancelsPendingDials) {
  FakeKubeletOptions options = KubeletOptions();
  options.dial_timeout = absl::Minutes(10);  // far beyond the test's timeout
  StartKubelet(options);
  auto plugin = ServePlugin();
  plugin->SetDevices({MakeDevice("gpu-0")});
  GPUOP_ASSERT_OK(plugin->Register(kubelet_->registration_socket()));
  GPUOP_ASSERT_OK(kubelet_->WaitForHealthyDevices(kGpu, 1, kWait));

  // A registration whose plugin never answers keeps the kubelet dialing.
  TestDevicePlugin absent({.dir = plugin_dir(), .endpoint = "absent.sock"});
  absl::Status pending;
  std::thread registering([&] { pending = absent.Register(kubelet_->registration_socket()); });
  GPUOP_ASSERT_OK(kubelet_->WaitForPluginCallsInFlight(1, kWait));

  kubelet_->Stop();
  registering.join();
  EXPECT_EQ(pending.code(), absl::StatusCode::kUnavailable) << pending;
  EXPECT_EQ(kubelet_->plugin_calls_in_flight(), 0);
  EXPECT_FALSE(kubelet_->running());
  EXPECT_FALSE(std::filesystem::exists(kubelet_->registration_socket()));
  EXPECT_FALSE(std::filesystem::exists(pod_resources_socket()));
  GPUOP_ASSERT_OK(plugin->WaitForOpenStreams(0, kWait));
  EXPECT_FALSE(kubelet_->Resource(kGpu)->connected);
  kubelet_->Stop();  // idempotent

  // Stopped state stays readable; registering is refused.
  EXPECT_EQ(kubelet_->Capacity(kGpu), 1);
  EXPECT_FALSE(plugin->Register(kubelet_->registration_socket()).ok());
}

TEST_F(FakeKubeletRegistrationTest, DestructionWithAConnectedPluginIsClean) {
  StartKubelet();
  auto plugin = ServePlugin();
  plugin->SetDevices({MakeDevice("gpu-0")});
  GPUOP_ASSERT_OK(plugin->Register(kubelet_->registration_socket()));
  GPUOP_ASSERT_OK(plugin->WaitForOpenStreams(1, kWait));
  kubelet_.reset();
  GPUOP_ASSERT_OK(plugin->WaitForOpenStreams(0, kWait));
  EXPECT_FALSE(std::filesystem::exists(plugin_dir() / kKubeletSocketName));
  EXPECT_TRUE(std::filesystem::exists(plugin->socket()));  // plugins' sockets are theirs
}

TEST_F(FakeKubeletRegistrationTest, StartChecksOptionsAndState) {
  FakeKubeletOptions relative = KubeletOptions();
  relative.device_plugin_dir = "device-plugins";
  EXPECT_EQ(FakeKubelet(relative).Start().code(), absl::StatusCode::kInvalidArgument);
  FakeKubeletOptions inside = KubeletOptions();
  inside.pod_resources_socket = plugin_dir() / "pod-resources.sock";
  EXPECT_EQ(FakeKubelet(inside).Start().code(), absl::StatusCode::kInvalidArgument);

  StartKubelet();
  EXPECT_EQ(kubelet_->Start().code(), absl::StatusCode::kFailedPrecondition);
  kubelet_->Stop();
  EXPECT_EQ(kubelet_->Restart().code(), absl::StatusCode::kFailedPrecondition);
  GPUOP_ASSERT_OK(kubelet_->Start());  // a stopped kubelet starts again
  EXPECT_TRUE(std::filesystem::exists(kubelet_->registration_socket()));
}

}  // namespace
}  // namespace gpuop::fakes
