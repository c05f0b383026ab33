// Safe driver load against the real kube-apiserver: the driver pod's first step
// (agent::WaitForSafeLoad) asks for the node to be made safe only when a driver is loaded, waits
// until the annotation the operator's upgrade reads (op::kDriverSafeLoadAnnotation) is removed,
// and clears a request an earlier pod left when nothing is loaded.
#include <filesystem>
#include <future>
#include <stop_token>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "agent/driver/safe_load.h"
#include "kube/client/resource.h"
#include "operator/api/node_state.h"
#include "test/cluster/test_api.h"
#include "test/fakes/sysfs/fake_sysfs.h"
#include "test/integration/kube_test_util.h"

namespace gpuop::test {
namespace {

class DriverSafeLoadIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = AdminClient();
    ASSERT_NE(client_, nullptr);
    node_ = UniqueName("node");
    ASSERT_TRUE(
        client_
            ->Create(kube::resources::kNodes, "",
                     {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", node_}}}})
            .ok());
  }
  void TearDown() override { (void)client_->Delete(kube::resources::kNodes, "", node_); }

  agent::SafeLoadOptions Options(const std::string& pod) const {
    return {.node_name = node_,
            .pod_name = pod,
            .paths = {.module_dir = (dir_.path() / "sys/module/nvidia").string(),
                      .driver_root = (dir_.path() / "run/nvidia/driver").string(),
                      .mountinfo = "/proc/self/mountinfo"},
            .poll = absl::Milliseconds(100)};
  }
  // The annotation's value; "" when absent.
  std::string Request() {
    absl::StatusOr<kube::Json> node = client_->Get(kube::resources::kNodes, "", node_);
    if (!node.ok()) return absl::StrCat("<", node.status().ToString(), ">");
    return (*node)["metadata"]
        .value("annotations", kube::Json::object())
        .value(op::kDriverSafeLoadAnnotation, "");
  }
  void SetRequest(const kube::Json& value) {
    ASSERT_TRUE(
        client_
            ->Patch(kube::resources::kNodes, "", node_, kube::PatchType::kMergePatch,
                    {{"metadata", {{"annotations", {{op::kDriverSafeLoadAnnotation, value}}}}}})
            .ok());
  }

  // The safe-load step of pod `pod`, started in the background once a driver is loaded, and
  // the wait until its request is on the Node.
  std::future<absl::Status> StartWaiting(const std::string& pod, std::stop_source& stop) {
    std::filesystem::create_directories(dir_.path() / "sys/module/nvidia");
    std::future<absl::Status> waiting = std::async(std::launch::async, [this, pod, &stop] {
      return agent::WaitForSafeLoad(*client_, Options(pod), stop.get_token());
    });
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (Request() != pod && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(50));
    EXPECT_EQ(Request(), pod);
    return waiting;
  }

  std::unique_ptr<kube::Client> client_;
  std::string node_;
  fakes::TempDir dir_;
};

TEST_F(DriverSafeLoadIntegrationTest, ALoadedDriverWaitsUntilTheOperatorRemovesTheRequest) {
  std::stop_source stop;
  std::future<absl::Status> waiting = StartWaiting("gpuop-driver-abcde", stop);
  ASSERT_FALSE(HasFailure());
  EXPECT_EQ(waiting.wait_for(std::chrono::milliseconds(500)), std::future_status::timeout)
      << "the pod must not load while its request stands";
  SetRequest(nullptr);  // what the operator's pod-restart-required step does
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_TRUE(waiting.get().ok());
}

TEST_F(DriverSafeLoadIntegrationTest, NothingLoadedLoadsAtOnceAndClearsAnEarlierRequest) {
  SetRequest("gpuop-driver-old");
  std::stop_source stop;
  EXPECT_TRUE(agent::WaitForSafeLoad(*client_, Options("gpuop-driver-new"), stop.get_token()).ok());
  EXPECT_EQ(Request(), "") << "a request of a pod that is gone would drain the node for nothing";
}

TEST_F(DriverSafeLoadIntegrationTest, AStoppedPodReturnsCancelled) {
  std::stop_source stop;
  std::future<absl::Status> waiting = StartWaiting("gpuop-driver-x", stop);
  stop.request_stop();
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(absl::IsCancelled(waiting.get()));
}

}  // namespace
}  // namespace gpuop::test
