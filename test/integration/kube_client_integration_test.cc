// The gpuop Kubernetes client against the real kube-apiserver: CRUD, conflicts, patches,
// server-side apply ownership, preconditions, pagination and metadata-only lists.
#include <atomic>
#include <set>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "kube/client/client.h"
#include "test/cluster/test_api.h"
#include "test/integration/kube_test_util.h"

namespace gpuop::test {
namespace {

using kube::Json;
using ::testing::HasSubstr;
namespace resources = kube::resources;

class KubeClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = AdminClient();
    ASSERT_NE(client_, nullptr);
    ns_ = CreateTestNamespace(*client_, "client");
  }

  std::unique_ptr<kube::Client> client_;
  std::string ns_;
};

TEST_F(KubeClientTest, CreateGetUpdateDeleteConfigMap) {
  auto created = client_->Create(resources::kConfigMaps, ns_, ConfigMap("cm", "one"));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_FALSE((*created)["metadata"]["uid"].get<std::string>().empty());

  auto duplicate = client_->Create(resources::kConfigMaps, ns_, ConfigMap("cm", "again"));
  EXPECT_EQ(duplicate.status().code(), absl::StatusCode::kAlreadyExists) << duplicate.status();
  EXPECT_EQ(kube::ApiReason(duplicate.status()), "AlreadyExists");
  EXPECT_THAT(duplicate.status().message(), HasSubstr("create configmaps " + ns_ + "/cm"));

  auto got = client_->Get(resources::kConfigMaps, ns_, "cm");
  ASSERT_TRUE(got.ok()) << got.status();
  (*got)["data"]["value"] = "two";
  auto updated = client_->Update(resources::kConfigMaps, *got);
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_EQ((*updated)["data"]["value"], "two");

  ASSERT_TRUE(client_->Delete(resources::kConfigMaps, ns_, "cm").ok());
  auto gone = client_->Get(resources::kConfigMaps, ns_, "cm");
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client_->Delete(resources::kConfigMaps, ns_, "cm").code(), absl::StatusCode::kNotFound);
}

TEST_F(KubeClientTest, StaleUpdateIsAbortedAndSucceedsAfterReread) {
  ASSERT_TRUE(client_->Create(resources::kConfigMaps, ns_, ConfigMap("cm", "v0")).ok());
  auto first_read = client_->Get(resources::kConfigMaps, ns_, "cm");
  ASSERT_TRUE(first_read.ok());
  Json a = *first_read;
  Json b = *first_read;
  a["data"]["value"] = "from-a";
  ASSERT_TRUE(client_->Update(resources::kConfigMaps, a).ok());
  b["data"]["value"] = "from-b";
  auto conflict = client_->Update(resources::kConfigMaps, b);
  ASSERT_EQ(conflict.status().code(), absl::StatusCode::kAborted) << conflict.status();
  EXPECT_EQ(kube::ApiReason(conflict.status()), "Conflict");
  EXPECT_EQ(kube::ApiHttpStatus(conflict.status()), 409);

  auto reread = client_->Get(resources::kConfigMaps, ns_, "cm");
  ASSERT_TRUE(reread.ok());
  EXPECT_EQ((*reread)["data"]["value"], "from-a");
  (*reread)["data"]["value"] = "from-b";
  EXPECT_TRUE(client_->Update(resources::kConfigMaps, *reread).ok());
}

TEST_F(KubeClientTest, MergeStrategicAndJsonPatches) {
  ASSERT_TRUE(client_
                  ->Create(resources::kPods, ns_, Json::parse(R"({"apiVersion":"v1","kind":"Pod",
      "metadata":{"name":"p","labels":{"keep":"yes"}},
      "spec":{"nodeName":"nowhere","containers":[
        {"name":"a","image":"x","env":[{"name":"A","value":"1"}]},
        {"name":"b","image":"y"}]}})"))
                  .ok());
  // JSON merge patch: labels merge, null deletes.
  auto merged = client_->Patch(resources::kPods, ns_, "p", kube::PatchType::kMergePatch,
                               {{"metadata", {{"labels", {{"added", "1"}, {"keep", nullptr}}}}}});
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ((*merged)["metadata"]["labels"], (Json{{"added", "1"}}));

  // Strategic merge patch: containers merge by name instead of being replaced.
  auto strategic = client_->Patch(resources::kPods, ns_, "p", kube::PatchType::kStrategicMergePatch,
                                  Json::parse(R"({"metadata":{"annotations":{"gpuop.io/x":"y"}},
                      "spec":{"containers":[{"name":"b","image":"y"}]}})"));
  ASSERT_TRUE(strategic.ok()) << strategic.status();
  EXPECT_EQ((*strategic)["spec"]["containers"].size(), 2u);
  EXPECT_EQ((*strategic)["metadata"]["annotations"]["gpuop.io/x"], "y");

  // JSON patch with a failing test operation changes nothing.
  auto failed =
      client_->Patch(resources::kPods, ns_, "p", kube::PatchType::kJsonPatch,
                     Json::parse(R"([{"op":"test","path":"/metadata/labels/added","value":"2"},
                                               {"op":"remove","path":"/metadata/labels/added"}])"));
  EXPECT_FALSE(failed.ok());
  auto applied =
      client_->Patch(resources::kPods, ns_, "p", kube::PatchType::kJsonPatch,
                     Json::parse(R"([{"op":"test","path":"/metadata/labels/added","value":"1"},
                                                {"op":"remove","path":"/metadata/labels/added"}])"));
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_FALSE((*applied)["metadata"].contains("labels") &&
               (*applied)["metadata"]["labels"].contains("added"));
}

TEST_F(KubeClientTest, ServerSideApplyTracksFieldOwnership) {
  Json cm = ConfigMap("owned", "x");
  cm["metadata"]["namespace"] = ns_;
  cm.erase("data");
  Json by_a = cm;
  by_a["data"] = {{"a", "1"}};
  ASSERT_TRUE(client_->Apply(resources::kConfigMaps, by_a, "manager-a").ok());
  Json by_b = cm;
  by_b["data"] = {{"b", "2"}};
  auto both = client_->Apply(resources::kConfigMaps, by_b, "manager-b");
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ((*both)["data"], (Json{{"a", "1"}, {"b", "2"}}));

  // B may not take a field A owns without force.
  Json steal = cm;
  steal["data"] = {{"a", "stolen"}, {"b", "2"}};
  auto conflict = client_->Apply(resources::kConfigMaps, steal, "manager-b");
  ASSERT_EQ(conflict.status().code(), absl::StatusCode::kAborted) << conflict.status();
  EXPECT_THAT(conflict.status().message(), HasSubstr("manager-a"));

  auto forced = client_->Apply(resources::kConfigMaps, steal, "manager-b", /*force=*/true);
  ASSERT_TRUE(forced.ok()) << forced.status();
  EXPECT_EQ((*forced)["data"]["a"], "stolen");

  // A no longer owns "a": applying without it leaves it, since B owns it now.
  Json a_again = cm;
  a_again["data"] = Json::object();
  auto after = client_->Apply(resources::kConfigMaps, a_again, "manager-a");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ((*after)["data"], (Json{{"a", "stolen"}, {"b", "2"}}));
  // B drops "b": a field only B owned disappears.
  Json b_drops = cm;
  b_drops["data"] = {{"a", "stolen"}};
  auto dropped = client_->Apply(resources::kConfigMaps, b_drops, "manager-b");
  ASSERT_TRUE(dropped.ok()) << dropped.status();
  EXPECT_EQ((*dropped)["data"], (Json{{"a", "stolen"}}));

  std::set<std::string> managers;
  for (const auto& f : (*dropped)["metadata"]["managedFields"]) managers.insert(f["manager"]);
  EXPECT_TRUE(managers.contains("manager-b"));

  EXPECT_EQ(client_->Apply(resources::kConfigMaps, cm, "").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(KubeClientTest, DeletePreconditions) {
  auto created = client_->Create(resources::kConfigMaps, ns_, ConfigMap("pre", "x"));
  ASSERT_TRUE(created.ok());
  const std::string uid = (*created)["metadata"]["uid"];
  auto wrong = client_->Delete(resources::kConfigMaps, ns_, "pre", {.uid = "not-" + uid});
  EXPECT_EQ(wrong.code(), absl::StatusCode::kAborted) << wrong;
  EXPECT_TRUE(client_->Get(resources::kConfigMaps, ns_, "pre").ok());
  EXPECT_TRUE(client_
                  ->Delete(resources::kConfigMaps, ns_, "pre",
                           {.uid = uid, .propagation_policy = "Background"})
                  .ok());
}

TEST_F(KubeClientTest, StatusSubresourceOfCustomResource) {
  auto api = TestApi::Connect(ClusterEnvironment::Get());
  ASSERT_TRUE(api.ok());
  const std::string group = UniqueName("g") + ".client.gpuop.io";
  Json crd = Json::parse(R"({
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "spec": {"scope": "Cluster",
      "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
      "versions": [{"name": "v1", "served": true, "storage": true,
        "subresources": {"status": {}},
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
          "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
          "status": {"type": "object", "properties": {"phase": {"type": "string"}}}}}}}]}})");
  crd["metadata"]["name"] = "gadgets." + group;
  crd["spec"]["group"] = group;
  ASSERT_TRUE(client_->Create(resources::kCustomResourceDefinitions, "", crd).ok());
  const kube::ResourceType gadgets{group, "v1", "gadgets", "Gadget", /*namespaced=*/false};
  ASSERT_TRUE(WaitUntil("gadgets served", absl::Seconds(30), [&]() -> absl::StatusOr<bool> {
                return client_->List(gadgets, "").ok();
              }).ok());

  auto created = client_->Create(gadgets, "",
                                 {{"apiVersion", group + "/v1"},
                                  {"kind", "Gadget"},
                                  {"metadata", {{"name", "g1"}}},
                                  {"spec", {{"size", 3}}},
                                  {"status", {{"phase", "ignored-on-create"}}}});
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_FALSE(created->contains("status"));  // The main resource ignores status.

  Json with_status = *created;
  with_status["status"] = {{"phase", "Ready"}};
  with_status["spec"]["size"] = 99;  // The status subresource ignores spec.
  auto updated = client_->UpdateStatus(gadgets, with_status);
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_EQ((*updated)["status"]["phase"], "Ready");
  EXPECT_EQ((*updated)["spec"]["size"], 3);

  auto patched = client_->Patch(gadgets, "", "g1", kube::PatchType::kMergePatch,
                                {{"status", {{"phase", "Degraded"}}}}, {.subresource = "status"});
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ((*patched)["status"]["phase"], "Degraded");
  EXPECT_TRUE(client_->Delete(gadgets, "", "g1").ok());
  EXPECT_TRUE(client_->Delete(resources::kCustomResourceDefinitions, "", "gadgets." + group).ok());
}

TEST_F(KubeClientTest, PaginatesTwoThousandObjects) {
  constexpr int kCount = 2000;
  std::atomic<int> next{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < 8; ++t) {
    writers.emplace_back([&] {
      for (int i = next++; i < kCount; i = next++) {
        Json cm = ConfigMap(absl::StrCat("cm-", i), std::string(64, 'x'));
        cm["metadata"]["labels"] = {{"batch", "pagination"}};
        if (!client_->Create(resources::kConfigMaps, ns_, cm).ok()) ++failures;
      }
    });
  }
  for (auto& w : writers) w.join();
  ASSERT_EQ(failures, 0);

  auto page = client_->List(resources::kConfigMaps, ns_,
                            {.label_selector = "batch=pagination", .limit = 150});
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->items.size(), 150u);
  EXPECT_FALSE(page->continue_token.empty());

  auto all = client_->ListAll(resources::kConfigMaps, ns_,
                              {.label_selector = "batch=pagination", .limit = 150});
  ASSERT_TRUE(all.ok()) << all.status();
  std::set<std::string> names;
  for (const auto& item : all->items) names.insert(item["metadata"]["name"]);
  EXPECT_EQ(all->items.size(), static_cast<size_t>(kCount));
  EXPECT_EQ(names.size(), static_cast<size_t>(kCount));
  EXPECT_FALSE(all->resource_version.empty());

  // Metadata-only: names and labels, no data.
  auto meta =
      client_->List(resources::kConfigMaps, ns_,
                    {.label_selector = "batch=pagination", .limit = 10, .metadata_only = true});
  ASSERT_TRUE(meta.ok()) << meta.status();
  ASSERT_EQ(meta->items.size(), 10u);
  EXPECT_EQ(meta->items[0]["kind"], "PartialObjectMetadata");
  EXPECT_FALSE(meta->items[0].contains("data"));
  EXPECT_EQ(meta->items[0]["metadata"]["labels"]["batch"], "pagination");
}

}  // namespace
}  // namespace gpuop::test
