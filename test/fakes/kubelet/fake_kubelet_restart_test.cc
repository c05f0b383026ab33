// Kubelet restarts, socket clean-up, and Node status patches of the fake kubelet.

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kube/client/client.h"
#include "kube/transport/http_client.h"
#include "kube/transport/rest_client.h"
#include "test/fakes/kubelet/fake_kubelet_test_util.h"

namespace gpuop::fakes {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kGpu[] = "example.com/gpu";

class FakeKubeletRestartTest : public FakeKubeletTestBase {};

TEST_F(FakeKubeletRestartTest, RestartDeletesSocketsKeepsTheCheckpointAndNeedsReregistration) {
  StartKubelet();
  const fs::path checkpoint = plugin_dir() / kKubeletCheckpointName;
  EXPECT_TRUE(fs::is_regular_file(checkpoint));
  std::ofstream(plugin_dir() / "notes.txt") << "not a socket";
  fs::create_directory(plugin_dir() / "subdir");

  auto plugin = ServePlugin();
  plugin->SetDevices({MakeDevice("gpu-0"), MakeDevice("gpu-1")});
  GPUOP_ASSERT_OK(plugin->Register(kubelet_->registration_socket()));
  GPUOP_ASSERT_OK(kubelet_->WaitForHealthyDevices(kGpu, 2, kWait));
  ASSERT_TRUE(fs::is_socket(plugin->socket()));

  GPUOP_ASSERT_OK(kubelet_->Restart());
  EXPECT_EQ(kubelet_->restarts(), 1);
  EXPECT_FALSE(fs::exists(plugin->socket()));
  EXPECT_TRUE(fs::is_socket(kubelet_->registration_socket()));
  EXPECT_TRUE(fs::is_regular_file(checkpoint));
  EXPECT_TRUE(fs::exists(plugin_dir() / "notes.txt"));
  EXPECT_TRUE(fs::is_directory(plugin_dir() / "subdir"));
  GPUOP_ASSERT_OK(plugin->WaitForOpenStreams(0, kWait));  // the old connection is gone

  // Known, with nothing allocatable, until the plugin registers again.
  absl::StatusOr<KubeletResource> resource = kubelet_->Resource(kGpu);
  ASSERT_TRUE(resource.ok()) << resource.status();
  EXPECT_FALSE(resource->connected);
  EXPECT_EQ(resource->capacity, 0);
  EXPECT_EQ(resource->allocatable, 0);
  EXPECT_EQ(kubelet_->Allocate(kGpu, {{"gpu-0"}}).status().code(),
            absl::StatusCode::kFailedPrecondition);

  // The plugin notices its socket is gone, serves again and re-registers.
  GPUOP_ASSERT_OK(plugin->Serve());
  GPUOP_ASSERT_OK(plugin->Register(kubelet_->registration_socket()));
  GPUOP_ASSERT_OK(kubelet_->WaitForConnected(kGpu, kWait));
  GPUOP_ASSERT_OK(kubelet_->WaitForHealthyDevices(kGpu, 2, kWait));
  EXPECT_EQ(kubelet_->Resource(kGpu)->registrations, 2);
}

TEST_F(FakeKubeletRestartTest, StartDeletesSocketsOfPluginsStartedEarlier) {
  fs::create_directories(plugin_dir());
  auto plugin = ServePlugin();
  ASSERT_TRUE(fs::is_socket(plugin->socket()));
  StartKubelet();
  EXPECT_FALSE(fs::exists(plugin->socket()));
  EXPECT_TRUE(fs::is_regular_file(plugin_dir() / kKubeletCheckpointName));
}

TEST_F(FakeKubeletRestartTest, PodAllocationsSurviveARestart) {
  StartKubelet();
  auto plugin = ServePlugin();
  plugin->SetDevices({MakeDevice("gpu-0"), MakeDevice("gpu-1")});
  GPUOP_ASSERT_OK(plugin->Register(kubelet_->registration_socket()));
  GPUOP_ASSERT_OK(kubelet_->WaitForHealthyDevices(kGpu, 2, kWait));
  GPUOP_ASSERT_OK(kubelet_
                      ->AllocatePod({.pod_namespace = "ns",
                                     .pod_name = "p",
                                     .container = "c",
                                     .resource = kGpu,
                                     .count = 1})
                      .status());

  GPUOP_ASSERT_OK(kubelet_->Restart());
  v1::ListPodResourcesResponse list;
  grpc::ClientContext context;
  ASSERT_TRUE(PodResourcesClient()->List(&context, v1::ListPodResourcesRequest(), &list).ok());
  ASSERT_EQ(list.pod_resources_size(), 1);
  EXPECT_EQ(list.pod_resources(0).containers(0).devices(0).device_ids(0), "gpu-0");
  EXPECT_THAT(kubelet_->AllocatedDevices(kGpu), ElementsAre("gpu-0"));

  GPUOP_ASSERT_OK(plugin->Serve());
  GPUOP_ASSERT_OK(plugin->Register(kubelet_->registration_socket()));
  GPUOP_ASSERT_OK(kubelet_->WaitForHealthyDevices(kGpu, 2, kWait));
  absl::StatusOr<PodAllocation> next = kubelet_->AllocatePod(
      {.pod_namespace = "ns", .pod_name = "q", .container = "c", .resource = kGpu, .count = 1});
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_THAT(next->device_ids, ElementsAre("gpu-1"));
}

// Accepts every request with 200 and keeps the Node status patches it was sent.
class RecordingApiServer : public kube::HttpClient {
 public:
  absl::StatusOr<kube::HttpResponse> Send(const kube::HttpRequest& request) override {
    absl::MutexLock lock(&mu_);
    requests_.push_back(request);
    return kube::HttpResponse{.status = 200, .body = "{}"};
  }
  absl::StatusOr<kube::HttpResponse> Stream(const kube::HttpRequest&, const DataHandler&,
                                            std::stop_token) override {
    return absl::UnimplementedError("no watches here");
  }

  // Waits until the latest request patched `resource` to these counts.
  absl::Status WaitForCounts(const std::string& resource, int capacity, int allocatable) {
    absl::MutexLock lock(&mu_);
    const auto seen = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      if (requests_.empty()) return false;
      const auto body = nlohmann::json::parse(requests_.back().body, nullptr, false);
      return body.is_object() && body["status"]["capacity"][resource] == std::to_string(capacity) &&
             body["status"]["allocatable"][resource] == std::to_string(allocatable);
    };
    if (mu_.AwaitWithTimeout(absl::Condition(&seen), kWait)) return absl::OkStatus();
    return absl::DeadlineExceededError("no patch with these counts; last: " +
                                       (requests_.empty() ? "" : requests_.back().body));
  }
  std::vector<kube::HttpRequest> requests() const {
    absl::MutexLock lock(&mu_);
    return requests_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<kube::HttpRequest> requests_ ABSL_GUARDED_BY(mu_);
};

TEST_F(FakeKubeletRestartTest, PatchesTheNodeStatusOnEveryChange) {
  auto api = std::make_shared<RecordingApiServer>();
  absl::StatusOr<std::unique_ptr<kube::RestClient>> rest = kube::RestClient::Create(
      {.server = "https://api.test:6443", .qps = 0}, {.http = api, .max_retries = 0});
  ASSERT_TRUE(rest.ok()) << rest.status();
  kube::Client client(std::shared_ptr<kube::RestClient>(*std::move(rest)));
  FakeKubeletOptions options = KubeletOptions();
  options.node_name = "node-a";
  options.kube_client = &client;
  StartKubelet(options);

  auto plugin = ServePlugin();
  plugin->SetDevices({MakeDevice("gpu-0"), MakeDevice("gpu-1"), MakeDevice("gpu-2")});
  GPUOP_ASSERT_OK(plugin->Register(kubelet_->registration_socket()));
  GPUOP_ASSERT_OK(api->WaitForCounts(kGpu, 3, 3));
  plugin->SetDevices({MakeDevice("gpu-0"), MakeDevice("gpu-1", false), MakeDevice("gpu-2")});
  GPUOP_ASSERT_OK(api->WaitForCounts(kGpu, 3, 2));
  plugin->EndStreams();
  GPUOP_ASSERT_OK(api->WaitForCounts(kGpu, 3, 0));
  GPUOP_ASSERT_OK(kubelet_->Restart());
  GPUOP_ASSERT_OK(api->WaitForCounts(kGpu, 0, 0));

  const std::vector<kube::HttpRequest> requests = api->requests();
  ASSERT_FALSE(requests.empty());
  for (const kube::HttpRequest& request : requests) {
    EXPECT_EQ(request.method, "PATCH");
    EXPECT_THAT(request.url, HasSubstr("/api/v1/nodes/node-a/status"));
    EXPECT_THAT(request.headers,
                testing::Contains(testing::Pair("Content-Type", "application/merge-patch+json")));
  }
  EXPECT_EQ(kubelet_->node_patches(), static_cast<int64_t>(requests.size()));
  GPUOP_ASSERT_OK(kubelet_->last_node_patch_status());
}

}  // namespace
}  // namespace gpuop::fakes
