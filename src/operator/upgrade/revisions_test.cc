#include "operator/upgrade/revisions.h"

#include <gtest/gtest.h>

#include "operator/upgrade/fake_api_test_util.h"

namespace gpuop::op::upgrade {
namespace {

kube::Json Revision(const std::string& name, int64_t revision, const std::string& owner_uid,
                    const std::string& hash = "") {
  kube::Json r = {{"apiVersion", "apps/v1"},
                  {"kind", "ControllerRevision"},
                  {"metadata",
                   {{"name", name},
                    {"ownerReferences",
                     {{{"apiVersion", "apps/v1"},
                       {"kind", "DaemonSet"},
                       {"name", "gpuop-driver"},
                       {"uid", owner_uid},
                       {"controller", true}}}}}},
                  {"revision", revision}};
  if (!hash.empty()) r["metadata"]["labels"]["controller-revision-hash"] = hash;
  return r;
}

TEST(LatestRevisionHashTest, PicksTheHighestRevisionTheDaemonSetControls) {
  const std::vector<kube::Json> revisions = {
      Revision("gpuop-driver-aaa", 1, "ds-uid", "aaa"),
      Revision("gpuop-driver-ccc", 3, "other-uid", "ccc"),  // an older DaemonSet of that name
      Revision("gpuop-driver-bbb", 2, "ds-uid", "bbb"),
  };
  EXPECT_EQ(LatestRevisionHash(revisions, "gpuop-driver", "ds-uid"), "bbb");
  EXPECT_EQ(LatestRevisionHash(revisions, "gpuop-driver", "nobody"), std::nullopt);
}

TEST(LatestRevisionHashTest, FallsBackToTheNameSuffix) {
  EXPECT_EQ(LatestRevisionHash({Revision("gpuop-driver-7d9f", 4, "u")}, "gpuop-driver", "u"),
            "7d9f");
}

kube::DaemonSet DaemonSet(int64_t generation, int64_t observed) {
  kube::DaemonSet ds;
  ds.metadata.name = "gpuop-driver";
  ds.metadata.namespace_ = "gpuop-system";
  ds.metadata.uid = "ds-uid";
  ds.metadata.generation = generation;
  ds.observed_generation = observed;
  return ds;
}

TEST(RevisionResolverTest, ListsOnlyWhenTheDaemonSetChanged) {
  auto api = std::make_shared<testing::ScriptedApi>();
  api->Answer("GET", "/controllerrevisions", 200,
              {{"items", {Revision("gpuop-driver-aaa", 1, "ds-uid", "aaa")}},
               {"metadata", {{"resourceVersion", "5"}}}});
  auto client = testing::ClientFor(api);
  RevisionResolver resolver(*client, "gpuop-system", "app.kubernetes.io/component=driver");

  auto first = resolver.UpdateRevision(DaemonSet(1, 1));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, "aaa");
  ASSERT_EQ(api->requests().size(), 1u);
  EXPECT_EQ(api->requests()[0].path,
            "/apis/apps/v1/namespaces/gpuop-system/controllerrevisions?labelSelector="
            "app.kubernetes.io%2Fcomponent%3Ddriver");
  EXPECT_EQ(*resolver.UpdateRevision(DaemonSet(1, 1)), "aaa");
  EXPECT_EQ(api->requests().size(), 1u);

  // A new spec the controller has not seen yet: unknown, and no List.
  EXPECT_EQ(*resolver.UpdateRevision(DaemonSet(2, 1)), std::nullopt);
  EXPECT_EQ(api->requests().size(), 1u);
  // Seen: listed again.
  EXPECT_EQ(*resolver.UpdateRevision(DaemonSet(2, 2)), "aaa");
  EXPECT_EQ(api->requests().size(), 2u);
}

TEST(RevisionResolverTest, ListErrorsAreReturned) {
  auto api = std::make_shared<testing::ScriptedApi>();
  api->Answer("GET", "/controllerrevisions", 403,
              testing::StatusBody(403, "Forbidden", "cannot list controllerrevisions"));
  auto client = testing::ClientFor(api);
  RevisionResolver resolver(*client, "gpuop-system", "");
  EXPECT_EQ(resolver.UpdateRevision(DaemonSet(1, 1)).status().code(),
            absl::StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace gpuop::op::upgrade
