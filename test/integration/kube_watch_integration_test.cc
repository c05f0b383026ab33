// Watches and informers against the real kube-apiserver, including a restart of the API server
// in the middle of a watch and a watch from a version the server no longer has.
#include <map>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "kube/informer/informer.h"
#include "kube/watch/watch.h"
#include "test/cluster/test_api.h"
#include "test/integration/kube_test_util.h"

namespace gpuop::test {
namespace {

using kube::Json;
namespace resources = kube::resources;

// What an informer's handlers saw, by object name.
class Recorder {
 public:
  kube::InformerHandlers<Json> Handlers() {
    return {.on_add = [this](const Json& o) { Record("add", o); },
            .on_update = [this](const Json&, const Json& o) { Record("update", o); },
            .on_delete = [this](const Json& o) { Record("delete", o); }};
  }
  int Count(const std::string& what, const std::string& name) {
    absl::MutexLock lock(&mu_);
    return counts_[what + "/" + name];
  }

 private:
  void Record(const std::string& what, const Json& o) {
    absl::MutexLock lock(&mu_);
    ++counts_[what + "/" + o["metadata"]["name"].get<std::string>()];
  }
  absl::Mutex mu_;
  std::map<std::string, int> counts_;
};

absl::StatusOr<Json> Identity(const Json& o) { return o; }

std::string DataOf(const kube::Store<Json>& store, const std::string& key) {
  auto o = store.Get(key);
  return o ? (*o)["data"].value("value", "") : "<absent>";
}

class KubeWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = AdminClient();
    ASSERT_NE(client_, nullptr);
    ns_ = CreateTestNamespace(*client_, "watch");
  }

  std::unique_ptr<kube::Client> client_;
  std::string ns_;
};

TEST_F(KubeWatchTest, InformerFollowsAddsUpdatesDeletesWithIndex) {
  ASSERT_TRUE(client_->Create(resources::kConfigMaps, ns_, ConfigMap("before", "0")).ok());
  kube::Informer<Json> informer(*client_, resources::kConfigMaps, {.ns = ns_}, Identity);
  informer.AddIndex("value", [](const Json& o) {
    return std::vector<std::string>{o["data"].value("value", "")};
  });
  Recorder recorder;
  informer.AddHandlers(recorder.Handlers());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(absl::Seconds(30)));
  EXPECT_EQ(recorder.Count("add", "before"), 1);

  ASSERT_TRUE(client_->Create(resources::kConfigMaps, ns_, ConfigMap("a", "1")).ok());
  ASSERT_TRUE(client_
                  ->Patch(resources::kConfigMaps, ns_, "before", kube::PatchType::kMergePatch,
                          {{"data", {{"value", "1"}}}})
                  .ok());
  ASSERT_TRUE(client_->Delete(resources::kConfigMaps, ns_, "a").ok());
  ASSERT_TRUE(client_->Create(resources::kConfigMaps, ns_, ConfigMap("b", "1")).ok());

  const absl::Status converged =
      WaitUntil("informer converged", absl::Seconds(30), [&]() -> absl::StatusOr<bool> {
        return informer.store().size() == 2 && DataOf(informer.store(), ns_ + "/before") == "1" &&
               informer.store().Get(ns_ + "/b") != nullptr;
      });
  ASSERT_TRUE(converged.ok()) << converged;
  EXPECT_EQ(informer.store().ByIndex("value", "1").size(), 2u);
  EXPECT_TRUE(informer.store().ByIndex("value", "0").empty());
  EXPECT_EQ(recorder.Count("update", "before"), 1);
  EXPECT_EQ(recorder.Count("add", "a"), 1);
  EXPECT_EQ(recorder.Count("delete", "a"), 1);
  EXPECT_EQ(informer.reflector().stats().lists, 1);
}

TEST_F(KubeWatchTest, MetadataOnlyInformerKeepsNoData) {
  ASSERT_TRUE(client_->Create(resources::kConfigMaps, ns_, ConfigMap("m", "secret-ish")).ok());
  kube::Informer<Json> informer(*client_, resources::kConfigMaps,
                                {.ns = ns_, .metadata_only = true}, Identity);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(absl::Seconds(30)));
  ASSERT_TRUE(client_->Create(resources::kConfigMaps, ns_, ConfigMap("n", "x")).ok());
  ASSERT_TRUE(WaitUntil("n seen", absl::Seconds(30), [&]() -> absl::StatusOr<bool> {
                return informer.store().Get(ns_ + "/n") != nullptr;
              }).ok());
  for (const auto& o : informer.store().List()) {
    EXPECT_EQ((*o)["kind"], "PartialObjectMetadata");
    EXPECT_FALSE(o->contains("data"));
  }
}

TEST_F(KubeWatchTest, InformerSurvivesApiServerRestartWithoutMissingTheFinalState) {
  ControlPlane& cp = ClusterEnvironment::Get();
  for (const char* name : {"keep", "change", "remove"}) {
    ASSERT_TRUE(client_->Create(resources::kConfigMaps, ns_, ConfigMap(name, "v1")).ok());
  }
  kube::Informer<Json> informer(
      *client_, resources::kConfigMaps,
      {.ns = ns_, .backoff = {.base = absl::Milliseconds(100), .cap = absl::Seconds(1)}}, Identity);
  Recorder recorder;
  informer.AddHandlers(recorder.Handlers());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(absl::Seconds(30)));
  EXPECT_EQ(informer.store().size(), 3u);

  // The watch is open; take the API server away under it and bring it back.
  // (A graceful stop would wait for the open watch to drain; one second is all it gets.)
  ASSERT_TRUE(cp.StopComponent(Component::kApiServer, absl::Seconds(1)).ok());
  ASSERT_TRUE(cp.StartComponent(Component::kApiServer).ok()) << cp.Diagnostics();

  // Changes made right after the restart, likely before the informer reconnects.
  auto writer = AdminClient();
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer
                  ->Patch(resources::kConfigMaps, ns_, "change", kube::PatchType::kMergePatch,
                          {{"data", {{"value", "v2"}}}})
                  .ok());
  ASSERT_TRUE(writer->Delete(resources::kConfigMaps, ns_, "remove").ok());
  ASSERT_TRUE(writer->Create(resources::kConfigMaps, ns_, ConfigMap("new", "v1")).ok());

  const absl::Status converged = WaitUntil(
      "informer converged after restart", absl::Seconds(60), [&]() -> absl::StatusOr<bool> {
        const auto& s = informer.store();
        return s.size() == 3 && DataOf(s, ns_ + "/change") == "v2" &&
               s.Get(ns_ + "/remove") == nullptr && s.Get(ns_ + "/new") != nullptr &&
               s.Get(ns_ + "/keep") != nullptr;
      });
  ASSERT_TRUE(converged.ok()) << converged
                              << "\nlast reflector error: " << informer.reflector().last_error();
  EXPECT_GE(informer.reflector().stats().watches, 2);
  EXPECT_GE(informer.reflector().stats().failures, 1);
  // Each change reached the handlers exactly once: nothing missed, nothing replayed twice.
  EXPECT_EQ(recorder.Count("update", "change"), 1);
  EXPECT_EQ(recorder.Count("delete", "remove"), 1);
  EXPECT_EQ(recorder.Count("add", "new"), 1);
  EXPECT_EQ(recorder.Count("update", "keep"), 0);
}

TEST_F(KubeWatchTest, WatchFromAVersionTooOldIsGone) {
  // Some history, so the oldest version the server still has is past 1.
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(
        client_->Create(resources::kConfigMaps, ns_, ConfigMap(absl::StrCat("h", i), "x")).ok());
  }
  int events = 0;
  const absl::Status status = kube::WatchOnce(
      *client_, resources::kConfigMaps, ns_, {.resource_version = "1"},
      [&](kube::WatchEvent) {
        ++events;
        return true;
      },
      std::stop_token());
  EXPECT_TRUE(kube::IsGone(status)) << status;
  EXPECT_EQ(kube::ApiReason(status), "Expired") << status;
  EXPECT_EQ(events, 0);
}

TEST_F(KubeWatchTest, WatchDeliversBookmarksAndEndsAtServerTimeout) {
  auto list = client_->List(resources::kConfigMaps, ns_);
  ASSERT_TRUE(list.ok());
  ASSERT_TRUE(client_->Create(resources::kConfigMaps, ns_, ConfigMap("w", "1")).ok());
  std::vector<kube::WatchEventType> types;
  const absl::Time start = absl::Now();
  const absl::Status status = kube::WatchOnce(
      *client_, resources::kConfigMaps, ns_,
      {.resource_version = list->resource_version, .server_timeout = absl::Seconds(2)},
      [&](kube::WatchEvent e) {
        types.push_back(e.type);
        return true;
      },
      std::stop_token());
  EXPECT_TRUE(status.ok()) << status;  // The server's timeout is a normal end.
  ASSERT_FALSE(types.empty());
  EXPECT_EQ(types[0], kube::WatchEventType::kAdded);
  EXPECT_GE(absl::Now() - start, absl::Seconds(1));
}

TEST_F(KubeWatchTest, StopEndsAWatchPromptly) {
  std::stop_source stop;
  std::thread stopper([&] {
    absl::SleepFor(absl::Milliseconds(300));
    stop.request_stop();
  });
  const absl::Status status = kube::WatchOnce(
      *client_, resources::kConfigMaps, ns_, {.server_timeout = absl::Minutes(5)},
      [](kube::WatchEvent) { return true; }, stop.get_token());
  stopper.join();
  EXPECT_TRUE(status.ok()) << status;
}

}  // namespace
}  // namespace gpuop::test
