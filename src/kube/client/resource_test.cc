#include "kube/client/resource.h"

#include <gtest/gtest.h>

namespace gpuop::kube {
namespace {

TEST(ResourceTest, CorePathsNamespacedAndClusterScoped) {
  EXPECT_EQ(resources::kPods.CollectionPath("ns1"), "/api/v1/namespaces/ns1/pods");
  EXPECT_EQ(resources::kPods.CollectionPath(""), "/api/v1/pods");
  EXPECT_EQ(resources::kPods.ObjectPath("ns1", "p", "eviction"),
            "/api/v1/namespaces/ns1/pods/p/eviction");
  EXPECT_EQ(resources::kNodes.ObjectPath("ignored", "n1", "status"), "/api/v1/nodes/n1/status");
  EXPECT_EQ(resources::kNodes.ApiVersion(), "v1");
}

TEST(ResourceTest, GroupPaths) {
  EXPECT_EQ(resources::kDaemonSets.CollectionPath("gpuop"),
            "/apis/apps/v1/namespaces/gpuop/daemonsets");
  EXPECT_EQ(resources::kLeases.ApiVersion(), "coordination.k8s.io/v1");
  EXPECT_EQ(resources::kCustomResourceDefinitions.ObjectPath("", "a.b.io"),
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/a.b.io");
}

TEST(ResourceTest, EncodesQueryValues) {
  EXPECT_EQ(UrlEncode("a=b,c in (x y)/~"), "a%3Db%2Cc%20in%20%28x%20y%29%2F~");
  EXPECT_EQ(QueryString({{"labelSelector", "app=x"}, {"limit", ""}, {"continue", "tok=="}}),
            "?labelSelector=app%3Dx&continue=tok%3D%3D");
  EXPECT_EQ(QueryString({{"limit", ""}}), "");
}

}  // namespace
}  // namespace gpuop::kube
