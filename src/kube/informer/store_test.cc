#include "kube/informer/store.h"

#include <algorithm>

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace gpuop::kube
