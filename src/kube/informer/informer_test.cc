#include "kube/informer/informer.h"

#include <condition_variable>
#include <deque>
#include <mutex>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/match.h"

namespace gpuop::kube {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Serves scripted list responses and watch streams; a watch with no script left stays open until
// the caller stops it, like a quiet API server.
class ScriptedServer : public HttpClient {
 public:
  void AddList(Json body) { lists_.push_back(body.dump()); }
  void AddWatch(std::vector<std::string> lines, int status = 200) {
    watches_.push_back({std::move(lines), status});
  }

  absl::StatusOr<HttpResponse> Send(const HttpRequest& request) override {
    std::lock_guard lock(mu_);
    urls_.push_back(request.url);
    requests_cv_.notify_all();
    if (lists_.empty()) return HttpResponse{.status = 500, .body = "no more lists"};
    HttpResponse r{.status = 200, .body = lists_.front()};
    lists_.pop_front();
    return r;
  }

  absl::StatusOr<HttpResponse> Stream(const HttpRequest& request, const DataHandler& on_data,
                                      std::stop_token stop) override {
    std::unique_lock lock(mu_);
    urls_.push_back(request.url);
    requests_cv_.notify_all();
    if (watches_.empty()) {
      cv_.wait(lock, stop, [] { return false; });
      return HttpResponse{.status = 200};
    }
    auto [lines, status] = watches_.front();
    watches_.pop_front();
    lock.unlock();
    if (status != 200) return HttpResponse{.status = status, .body = "{}"};
    for (const auto& line : lines) {
      if (!on_data(line + "\n")) break;
    }
    return HttpResponse{.status = 200};
  }

  std::vector<std::string> urls() {
    std::lock_guard lock(mu_);
    return urls_;
  }

  // Waits (30 s at most) until `n` requests have arrived.
  void AwaitRequests(size_t n) {
    std::unique_lock lock(mu_);
    requests_cv_.wait_for(lock, std::chrono::seconds(30), [&] { return urls_.size() >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable_any cv_;
  std::condition_variable requests_cv_;
  std::deque<std::string> lists_;
  std::deque<std::pair<std::vector<std::string>, int>> watches_;
  std::vector<std::string> urls_;
};

Json Cm(const std::string& name, const std::string& rv, const std::string& value) {
  return {{"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"namespace", "ns"}, {"resourceVersion", rv}}},
          {"data", {{"v", value}}}};
}

std::string Event(const std::string& type, const Json& object) {
  return Json{{"type", type}, {"object", object}}.dump();
}

class InformerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto rest = RestClient::Create({.server = "https://api.test", .qps = 0},
                                   {.http = server_, .max_retries = 0});
    ASSERT_TRUE(rest.ok());
    client_ = std::make_unique<Client>(std::shared_ptr<RestClient>(*std::move(rest)));
  }

  std::vector<std::string> Log() {
    absl::MutexLock lock(&mu_);
    return log_;
  }
  InformerHandlers<Json> Handlers() {
    auto add = [this](const std::string& what) {
      absl::MutexLock lock(&mu_);
      log_.push_back(what);
    };
    return {
        .on_add = [add](const Json& o) { add("add " + o["metadata"]["name"].get<std::string>()); },
        .on_update =
            [add](const Json&, const Json& o) {
              add("update " + o["metadata"]["name"].get<std::string>() + "=" +
                  o["data"]["v"].get<std::string>());
            },
        .on_delete =
            [add](const Json& o) { add("delete " + o["metadata"]["name"].get<std::string>()); }};
  }
  void AwaitLog(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return log_.size() >= n; };
    mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(30));
  }

  std::shared_ptr<ScriptedServer> server_ = std::make_shared<ScriptedServer>();
  std::unique_ptr<Client> client_;
  absl::Mutex mu_;
  std::vector<std::string> log_ ABSL_GUARDED_BY(mu_);
};

TEST_F(InformerTest, GoneWatchRelistsAndReconcilesTheStore) {
  server_->AddList({{"metadata", {{"resourceVersion", "10"}}},
                    {"items", {Cm("a", "5", "1"), Cm("b", "6", "1")}}});
  server_->AddWatch(
      {Event("MODIFIED", Cm("a", "11", "2")),
       Event("BOOKMARK", {{"kind", "ConfigMap"}, {"metadata", {{"resourceVersion", "11"}}}}),
       Event("ERROR", {{"kind", "Status"},
                       {"code", 410},
                       {"reason", "Expired"},
                       {"message", "too old resource version"}})});
  // While the informer was cut off, b was deleted and c created; a is unchanged since rv 11.
  server_->AddList({{"metadata", {{"resourceVersion", "12"}}},
                    {"items", {Cm("a", "11", "2"), Cm("c", "12", "1")}}});

  Informer<Json> informer(*client_, {"", "v1", "configmaps", "ConfigMap", true},
                          {.ns = "ns", .backoff = {.base = absl::Milliseconds(1)}},
                          [](const Json& o) -> absl::StatusOr<Json> { return o; });
  informer.AddHandlers(Handlers());
  informer.Start();
  AwaitLog(5);
  server_->AwaitRequests(4);  // The watch after the relist.
  informer.Stop();

  EXPECT_THAT(Log(), ElementsAre("add a", "add b", "update a=2", "add c", "delete b"));
  EXPECT_TRUE(informer.HasSynced());
  EXPECT_EQ(informer.store().size(), 2u);
  EXPECT_EQ((*informer.store().Get("ns/a"))["data"]["v"], "2");
  EXPECT_EQ(informer.reflector().stats().lists, 2);
  EXPECT_EQ(informer.reflector().stats().gone, 1);
  EXPECT_EQ(informer.reflector().last_resource_version(), "12");

  const auto urls = server_->urls();
  ASSERT_GE(urls.size(), 4u);
  EXPECT_THAT(urls[0], HasSubstr("/api/v1/namespaces/ns/configmaps?limit=500"));
  EXPECT_THAT(urls[1], HasSubstr("watch=true&resourceVersion=10&"));
  EXPECT_THAT(urls[1], HasSubstr("allowWatchBookmarks=true"));
  EXPECT_THAT(urls[3], HasSubstr("watch=true&resourceVersion=12&"));
}

TEST_F(InformerTest, RejectedObjectsAreLeftOutAndCounted) {
  server_->AddList({{"metadata", {{"resourceVersion", "3"}}},
                    {"items", {Cm("good", "1", "1"), Cm("bad", "2", "1")}}});
  Informer<std::string> informer(*client_, {"", "v1", "configmaps", "ConfigMap", true},
                                 {.ns = "ns"}, [](const Json& o) -> absl::StatusOr<std::string> {
                                   const std::string name = o["metadata"]["name"];
                                   if (name == "bad")
                                     return absl::InvalidArgumentError("bad object");
                                   return name;
                                 });
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(absl::Seconds(30)));
  informer.Stop();
  EXPECT_EQ(informer.store().size(), 1u);
  EXPECT_NE(informer.store().Get("ns/good"), nullptr);
  EXPECT_EQ(informer.rejected(), 1);
}

TEST_F(InformerTest, FailedListIsRetriedWithBackoff) {
  // The first list fails (no script), then succeeds.
  Informer<Json> informer(
      *client_, {"", "v1", "configmaps", "ConfigMap", true},
      {.ns = "ns", .backoff = {.base = absl::Milliseconds(1), .cap = absl::Milliseconds(5)}},
      [](const Json& o) -> absl::StatusOr<Json> { return o; });
  informer.Start();
  while (informer.reflector().stats().failures == 0) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_FALSE(informer.HasSynced());
  EXPECT_THAT(std::string(informer.reflector().last_error().message()), HasSubstr("500"));
  server_->AddList({{"metadata", {{"resourceVersion", "1"}}}, {"items", Json::array()}});
  ASSERT_TRUE(informer.WaitForSync(absl::Seconds(30)));
  informer.Stop();
}

}  // namespace
}  // namespace gpuop::kube
