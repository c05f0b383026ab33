#include "kube/informer/store.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "kube/informer/indexers.h"

namespace gpuop::kube {
namespace {

struct Item {
  std::string node;
  std::string zone;
};

std::vector<std::string> Nodes(const std::vector<std::shared_ptr<const Item>>& items) {
  std::vector<std::string> out;
  for (const auto& i : items) out.push_back(i->node);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(StoreTest, UpsertGetEraseAndIndexes) {
  Store<Item> store;
  store.AddIndex("node", [](const Item& i) { return std::vector<std::string>{i.node}; });
  EXPECT_EQ(store.Upsert("ns/a", std::make_shared<Item>(Item{"n1", "z1"}), "1"), nullptr);
  store.Upsert("ns/b", std::make_shared<Item>(Item{"n1", "z2"}), "2");
  store.Upsert("ns/c", std::make_shared<Item>(Item{"n2", "z1"}), "3");
  EXPECT_EQ(store.size(), 3u);
  EXPECT_EQ(store.Get("ns/a")->zone, "z1");
  EXPECT_EQ(store.Get("ns/missing"), nullptr);
  EXPECT_EQ(store.ResourceVersion("ns/b"), "2");
  EXPECT_EQ(store.ByIndex("node", "n1").size(), 2u);

  // Moving b to n2 moves it in the index too.
  auto old = store.Upsert("ns/b", std::make_shared<Item>(Item{"n2", "z2"}), "4");
  ASSERT_NE(old, nullptr);
  EXPECT_EQ(old->node, "n1");
  EXPECT_EQ(store.ByIndex("node", "n1").size(), 1u);
  EXPECT_EQ(store.ByIndex("node", "n2").size(), 2u);

  auto removed = store.Erase("ns/c");
  ASSERT_NE(removed, nullptr);
  EXPECT_EQ(store.Erase("ns/c"), nullptr);
  EXPECT_EQ(Nodes(store.ByIndex("node", "n2")), std::vector<std::string>{"n2"});
  EXPECT_TRUE(store.ByIndex("node", "nowhere").empty());
  EXPECT_TRUE(store.ByIndex("no-such-index", "n1").empty());
  // A reader keeps its object after the store moved on.
  EXPECT_EQ(removed->zone, "z1");
}

TEST(StoreTest, MultiValuedIndex) {
  Store<Item> store;
  store.AddIndex("both", [](const Item& i) { return std::vector<std::string>{i.node, i.zone}; });
  store.Upsert("a", std::make_shared<Item>(Item{"n1", "z1"}), "1");
  EXPECT_EQ(store.ByIndex("both", "n1").size(), 1u);
  EXPECT_EQ(store.ByIndex("both", "z1").size(), 1u);
  store.Erase("a");
  EXPECT_TRUE(store.ByIndex("both", "z1").empty());
}

TEST(IndexersTest, NamespaceLabelAndNodeName) {
  Store<Pod> store;
  store.AddIndex(kNamespaceIndex, IndexByNamespace<Pod>());
  store.AddIndex("app", IndexByLabel<Pod>("app"));
  store.AddIndex(kNodeNameIndex, IndexPodsByNode());
  auto pod = [](std::string ns, std::string name, std::string app, std::string node) {
    Pod p;
    p.metadata.namespace_ = std::move(ns);
    p.metadata.name = std::move(name);
    if (!app.empty()) p.metadata.labels = Labels({{"app", app}});
    p.node_name = std::move(node);
    return std::make_shared<const Pod>(std::move(p));
  };
  store.Upsert("a/1", pod("a", "1", "train", "gpu-1"), "1");
  store.Upsert("a/2", pod("a", "2", "", "gpu-2"), "1");
  store.Upsert("b/3", pod("b", "3", "train", ""), "1");
  EXPECT_EQ(store.ByIndex(kNamespaceIndex, "a").size(), 2u);
  EXPECT_EQ(store.ByIndex("app", "train").size(), 2u);
  EXPECT_EQ(store.ByIndex(kNodeNameIndex, "gpu-1").size(), 1u);
  EXPECT_TRUE(store.ByIndex(kNodeNameIndex, "").empty());
}

}  // namespace
}  // namespace gpuop::kube
