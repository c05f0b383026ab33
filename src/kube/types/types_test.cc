#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kube/types/daemon_set.h"
#include "kube/types/lease.h"
#include "kube/types/node.h"
#include "kube/types/pod.h"
#include "test/fakes/node_objects.h"

namespace gpuop::kube {
namespace {

using nlohmann::json;

TEST(NodeTest, ParsesWhatControllersUseFromARealisticNode) {
  auto node = ParseNode(fakes::RealisticGpuNode(7));
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(node->metadata.name, "gpu-node-7");
  EXPECT_EQ(node->metadata.Key(), "gpu-node-7");
  EXPECT_EQ(node->metadata.resource_version, "1007");
  EXPECT_EQ(node->metadata.labels.size(), 41u);
  EXPECT_EQ(node->metadata.labels.Get("nvidia.com/gpu.product"), "NVIDIA-H100-80GB-HBM3");
  // Only gpuop's annotations are kept by default.
  EXPECT_EQ(node->metadata.annotations.size(), 1u);
  EXPECT_EQ(node->metadata.annotations.Get("gpuop.io/driver-upgrade-state"), "upgrade-done");
  EXPECT_TRUE(node->Ready());
  EXPECT_FALSE(node->unschedulable);
  ASSERT_EQ(node->taints.size(), 1u);
  EXPECT_EQ(node->taints[0], (Taint{"nvidia.com/gpu", "present", "NoSchedule"}));
  EXPECT_EQ(node->allocatable.Get("nvidia.com/gpu"), "8");
  EXPECT_EQ(node->kernel_version, "6.1.0-27-cloud-amd64");
  EXPECT_EQ(node->kubelet_version, "v1.36.3");
  EXPECT_EQ(node->metadata.creation_timestamp, absl::FromUnixSeconds(1793520000));
}

TEST(NodeTest, WrongMetadataTypesAreInvalid) {
  json bad = fakes::RealisticGpuNode(1);
  bad["metadata"]["name"] = 5;
  auto node = ParseNode(bad);
  EXPECT_EQ(node.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(node.status().message(), ::testing::HasSubstr("metadata.name"));
  EXPECT_FALSE(ParseNode(json{{"kind", "Node"}}).ok());
}

TEST(PodTest, PhaseReadinessNodeAndGpuRequests) {
  auto pod = ParsePod(json::parse(R"({
    "metadata": {"name": "train-0", "namespace": "ml", "deletionTimestamp": "2026-11-29T10:00:00Z",
                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                                      "uid": "u1", "controller": true}]},
    "spec": {"nodeName": "gpu-node-1", "containers": [
      {"name": "main", "image": "cuda:12", "resources": {"limits": {"nvidia.com/gpu": "2"}}},
      {"name": "sidecar", "image": "log:1"}]},
    "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
               "containerStatuses": [{"restartCount": 2}, {"restartCount": 1}]}})"));
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->metadata.Key(), "ml/train-0");
  EXPECT_EQ(pod->node_name, "gpu-node-1");
  EXPECT_EQ(pod->phase, "Running");
  EXPECT_TRUE(pod->Ready());
  EXPECT_TRUE(pod->Requests("nvidia.com/gpu"));
  EXPECT_FALSE(pod->Requests("amd.com/gpu"));
  EXPECT_EQ(pod->restart_count, 3);
  ASSERT_TRUE(pod->metadata.deletion_timestamp.has_value());
  ASSERT_NE(pod->metadata.ControllerRef(), nullptr);
  EXPECT_EQ(pod->metadata.ControllerRef()->kind, "ReplicaSet");
}

TEST(DaemonSetTest, RolledOutNeedsObservedGenerationAndAvailability) {
  json ds = json::parse(R"({
    "metadata": {"name": "plugin", "namespace": "gpuop", "generation": 3},
    "spec": {"updateStrategy": {"type": "OnDelete"}},
    "status": {"observedGeneration": 3, "desiredNumberScheduled": 4, "currentNumberScheduled": 4,
               "updatedNumberScheduled": 4, "numberReady": 4, "numberAvailable": 4}})");
  auto parsed = ParseDaemonSet(ds);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->update_strategy, "OnDelete");
  EXPECT_TRUE(parsed->RolledOut());
  ds["status"]["observedGeneration"] = 2;
  EXPECT_FALSE(ParseDaemonSet(ds)->RolledOut());
  ds["status"]["observedGeneration"] = 3;
  ds["status"]["numberUnavailable"] = 1;
  ds["status"]["numberAvailable"] = 3;
  EXPECT_FALSE(ParseDaemonSet(ds)->RolledOut());
}

TEST(LeaseTest, RoundTripsMicroTime) {
  Lease lease;
  lease.metadata.name = "gpuop-operator";
  lease.metadata.namespace_ = "gpuop";
  lease.holder_identity = "pod-a";
  lease.lease_duration_seconds = 15;
  lease.acquire_time = absl::FromUnixMicros(1'790'000'000'123'456);
  lease.renew_time = absl::FromUnixMicros(1'790'000'010'000'001);
  lease.lease_transitions = 2;
  const json j = lease.ToJson();
  EXPECT_EQ(j["spec"]["renewTime"], "2026-09-21T14:13:30.000001Z");
  auto back = ParseLease(j);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->holder_identity, "pod-a");
  EXPECT_EQ(back->lease_duration_seconds, 15);
  EXPECT_EQ(back->acquire_time, lease.acquire_time);
  EXPECT_EQ(back->renew_time, lease.renew_time);
  EXPECT_EQ(back->lease_transitions, 2);
}

TEST(TimestampTest, ParsesApiServerFormats) {
  EXPECT_EQ(*ParseTimestamp("2026-01-02T03:04:05Z"), absl::FromUnixSeconds(1767323045));
  EXPECT_EQ(*ParseTimestamp("2026-01-02T03:04:05.250000Z"),
            absl::FromUnixSeconds(1767323045) + absl::Milliseconds(250));
  EXPECT_FALSE(ParseTimestamp("yesterday").ok());
  EXPECT_EQ(FormatTimestamp(absl::FromUnixSeconds(1767323045)), "2026-01-02T03:04:05Z");
}

}  // namespace
}  // namespace gpuop::kube
