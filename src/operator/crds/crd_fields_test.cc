// Every field of every CRD is acted on: a spec field some parser reads (the parsers feed what
// the operator renders and plans), a status field the operator writes. A field the schema
// declares and nothing reads is accepted from users and silently ignored; a field a parser reads
// that the schema lacks is pruned by the API server before the operator sees it. Both fail here.
//
// Reading is what this can see: a parser that reads a field into a struct member nothing uses is
// caught by the tests of the component that should act on it, not here.
#include <set>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "operator/api/node_pool.h"
#include "operator/api/node_state.h"
#include "operator/api/policy.h"
#include "operator/api/reader.h"
#include "operator/crds/crds.h"
#include "operator/nodes/gpu_node_status.h"
#include "operator/nodes/inventory.h"

namespace gpuop::op {
namespace {

using Json = nlohmann::json;

const Json& Schema(const std::string& crd) {
  for (const auto& c : Crds()) {
    if (c["metadata"]["name"] == crd) return c["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
  }
  static const Json none;
  ADD_FAILURE() << "no CRD " << crd;
  return none;
}

// The schema's fields under `path`: `leaves` the ones with no properties of their own (values,
// maps, lists of values), `all` every field; a list of objects has its items' fields under its
// own path ("spec.driver.env.name").
void Walk(const Json& schema, const std::string& path, std::set<std::string>& leaves,
          std::set<std::string>& all) {
  all.insert(path);
  const Json* s = &schema;
  if (s->value("type", "") == "array" && s->contains("items")) s = &(*s)["items"];
  if (!s->contains("properties") || (*s)["properties"].empty()) {
    leaves.insert(path);
    return;
  }
  for (const auto& [name, property] : (*s)["properties"].items()) {
    Walk(property, path + "." + name, leaves, all);
  }
}

// `field` is read: itself or a field above it was read as a whole (a selector, a list of
// tolerations, the API server address: handed on as one value).
bool Read(const std::string& field, const std::set<std::string>& read) {
  for (std::string p = field;; p = p.substr(0, p.rfind('.'))) {
    if (read.contains(p)) return true;
    if (p.find('.') == std::string::npos) return false;
  }
}

// Checks both directions for the spec of `crd`, given the fields its parser read.
void ExpectEveryFieldRead(const std::string& crd, const std::set<std::string>& read) {
  std::set<std::string> leaves, all;
  Walk(Schema(crd)["properties"]["spec"], "spec", leaves, all);
  ASSERT_GT(leaves.size(), 3u);
  std::vector<std::string> ignored, unknown;
  for (const std::string& field : leaves) {
    if (!Read(field, read)) ignored.push_back(field);
  }
  for (const std::string& field : read) {
    if (absl::StartsWith(field, "spec.") && !all.contains(field)) unknown.push_back(field);
  }
  EXPECT_THAT(ignored, ::testing::IsEmpty())
      << crd << ": declared and never read: " << absl::StrJoin(ignored, ", ");
  EXPECT_THAT(unknown, ::testing::IsEmpty())
      << crd << ": read but not in the schema (the API server prunes them): "
      << absl::StrJoin(unknown, ", ");
}

TEST(CrdFieldsTest, EveryPolicyFieldIsReadByTheParser) {
  ScopedFieldLog log;
  auto policy = ParseClusterPolicy(
      {{"metadata", {{"name", "default"}}}, {"spec", {{"driver", {{"version", "570.86.15"}}}}}});
  ASSERT_TRUE(policy.ok()) << policy.status();
  ExpectEveryFieldRead("gpuclusterpolicies.gpuop.io", log.paths());
}

TEST(CrdFieldsTest, EveryPoolFieldIsReadByTheParser) {
  ScopedFieldLog log;
  auto pool = ParseNodePool({{"metadata", {{"name", "h100"}}},
                             {"spec",
                              {{"nodeSelector", {{"matchLabels", {{"gpu", "h100"}}}}},
                               {"timeSlicing", {{"replicas", 2}}}}}});
  ASSERT_TRUE(pool.ok()) << pool.status();
  ExpectEveryFieldRead("gpunodepools.gpuop.io", log.paths());
}

// Every path of `value` under `path`, list items under the list's own path.
void Paths(const Json& value, const std::string& path, std::set<std::string>& out) {
  out.insert(path);
  if (value.is_object()) {
    for (const auto& [key, v] : value.items()) Paths(v, path + "." + key, out);
  } else if (value.is_array()) {
    for (const auto& v : value) Paths(v, path, out);
  }
}

TEST(CrdFieldsTest, EveryGpuNodeStatusFieldIsWritten) {
  const Json node_json = Json::parse(R"({
    "metadata": {"name": "gpu-1", "uid": "u-1",
      "labels": {"nvidia.com/gpu.count": "8", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                 "gpuop.io/driver-upgrade-state": "drain-required",
                 "gpuop.io/remediation-state": "in-progress"},
      "annotations": {
        "gpuop.io/gpu-inventory": "{\"driver\":\"570.86.15\",\"cuda\":\"12.8\",\"gpus\":[{\"index\":0,\"uuid\":\"GPU-a\",\"product\":\"NVIDIA H100\",\"memoryMiB\":81559,\"pciBusId\":\"0000:17:00.0\",\"migEnabled\":true,\"migDevices\":[{\"profile\":\"1g.10gb\",\"uuid\":\"MIG-a\"}]}]}",
        "gpuop.io/driver-upgrade-message": "draining",
        "gpuop.io/driver-upgrade-since": "2026-11-29T10:00:00Z",
        "gpuop.io/remediation-step": "Drain",
        "gpuop.io/remediation-message": "evicting",
        "gpuop.io/remediation-since": "2026-11-29T10:00:00Z",
        "gpuop.io/remediation-attempts": "2026-11-29T10:00:00Z"}},
    "status": {"conditions": [
      {"type": "Ready", "status": "True"},
      {"type": "GPUHealthy", "status": "False", "reason": "XidError", "message": "GPU 3: XID 79",
       "lastTransitionTime": "2026-11-29T10:00:00Z"},
      {"type": "GPURecoveryAction", "status": "True", "reason": "RebootNode",
       "message": "GPU 3 (GPU-a): XID 79"}]}})");
  auto node = kube::ParseNode(node_json);
  ASSERT_TRUE(node.ok()) << node.status();
  PolicySpec policy;
  policy.driver.version = "570.86.15";
  std::set<std::string> written;
  Paths(GpuNodeStatus(*node, &policy, "h100",
                      {{.name = "exporter", .state = "NotReady", .message = "pod p is Pending"}},
                      "580.65.06"),
        "status", written);
  // The conditions appear with an inventory that cannot be read.
  kube::Node bad = *node;
  std::map<std::string, std::string> annotations = bad.metadata.annotations.ToMap();
  annotations[kGpuInventoryAnnotation] = R"({"driver":1})";
  bad.metadata.annotations = kube::Labels(annotations);
  Paths(GpuNodeStatus(bad, &policy, "", {}), "status", written);

  std::set<std::string> leaves, all;
  Walk(Schema("gpunodes.gpuop.io")["properties"]["status"], "status", leaves, all);
  std::vector<std::string> never, unknown;
  for (const std::string& field : leaves) {
    if (!written.contains(field)) never.push_back(field);
  }
  for (const std::string& field : written) {
    if (!all.contains(field)) unknown.push_back(field);
  }
  EXPECT_THAT(never, ::testing::IsEmpty())
      << "declared in the GPUNode status and never written: " << absl::StrJoin(never, ", ");
  EXPECT_THAT(unknown, ::testing::IsEmpty())
      << "written but not in the schema (pruned): " << absl::StrJoin(unknown, ", ");
}

}  // namespace
}  // namespace gpuop::op
