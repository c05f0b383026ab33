#include "kube/transport/rest_client.h"

#include <deque>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "common/fake_clock.h"

namespace gpuop::kube {
namespace {

// Answers requests from a script and records what it was sent.
class ScriptedHttp : public HttpClient {
 public:
  void Then(absl::StatusOr<HttpResponse> r) { script_.push_back(std::move(r)); }
  void Then(int status, HttpHeaders headers = {}) {
    script_.push_back(HttpResponse{.status = status, .headers = std::move(headers)});
  }

  absl::StatusOr<HttpResponse> Send(const HttpRequest& request) override {
    sent_.push_back(request);
    if (script_.empty()) return HttpResponse{.status = 200};
    auto next = std::move(script_.front());
    script_.pop_front();
    return next;
  }
  absl::StatusOr<HttpResponse> Stream(const HttpRequest& request, const DataHandler& on_data,
                                      std::stop_token) override {
    sent_.push_back(request);
    on_data("{}\n");
    return HttpResponse{.status = 200};
  }

  const std::vector<HttpRequest>& sent() const { return sent_; }

 private:
  std::deque<absl::StatusOr<HttpResponse>> script_;
  std::vector<HttpRequest> sent_;
};

std::string HeaderOf(const HttpRequest& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

class RestClientTest : public ::testing::Test {
 protected:
  std::unique_ptr<RestClient> Make(RestConfig config = {}, int max_retries = 3) {
    if (config.server.empty()) config.server = "https://api.test:6443";
    config.qps = 0;  // No rate limiting unless a test asks for it.
    auto client = RestClient::Create(
        config, {.clock = &clock_,
                 .http = http_,
                 .max_retries = max_retries,
                 .backoff = {.base = absl::Seconds(1), .cap = absl::Seconds(8), .jitter = 0}});
    EXPECT_TRUE(client.ok()) << client.status();
    return *std::move(client);
  }

  // Runs `fn` on a thread, advancing the fake clock whenever the client sleeps, and returns
  // how much fake time passed.
  absl::Duration RunWithClock(const std::function<void()>& fn) {
    const absl::Time start = clock_.Now();
    std::atomic<bool> done{false};
    std::thread t([&] {
      fn();
      done = true;
    });
    while (!done) {
      if (clock_.waiters() > 0) clock_.Advance(absl::Milliseconds(250));
      std::this_thread::yield();
    }
    t.join();
    return clock_.Now() - start;
  }

  common::FakeClock clock_;
  std::shared_ptr<ScriptedHttp> http_ = std::make_shared<ScriptedHttp>();
};

TEST_F(RestClientTest, BuildsUrlHeadersAndBody) {
  auto client = Make({.bearer_token = "tok"});
  auto r = client->Send({.method = "POST",
                         .path = "/api/v1/namespaces",
                         .body = "{}",
                         .content_type = "application/json"});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(http_->sent().size(), 1u);
  const HttpRequest& sent = http_->sent()[0];
  EXPECT_EQ(sent.url, "https://api.test:6443/api/v1/namespaces");
  EXPECT_EQ(sent.method, "POST");
  EXPECT_EQ(sent.body, "{}");
  EXPECT_EQ(HeaderOf(sent, "Authorization"), "Bearer tok");
  EXPECT_EQ(HeaderOf(sent, "Content-Type"), "application/json");
  EXPECT_EQ(HeaderOf(sent, "Accept"), "application/json");
}

TEST_F(RestClientTest, RetriesTooManyRequestsHonouringRetryAfter) {
  auto client = Make();
  http_->Then(429, {{"Retry-After", "5"}});
  http_->Then(200);
  absl::StatusOr<HttpResponse> r;
  const absl::Duration waited = RunWithClock([&] { r = client->Send({.path = "/x"}); });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(http_->sent().size(), 2u);
  EXPECT_GE(waited, absl::Seconds(5));
}

TEST_F(RestClientTest, BacksOffExponentiallyAndGivesUp) {
  auto client = Make({}, /*max_retries=*/3);
  for (int i = 0; i < 4; ++i) http_->Then(503);
  absl::StatusOr<HttpResponse> r;
  const absl::Duration waited = RunWithClock([&] { r = client->Send({.path = "/x"}); });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 503);  // The last answer, after 1 + 3 attempts.
  EXPECT_EQ(http_->sent().size(), 4u);
  EXPECT_GE(waited, absl::Seconds(1 + 2 + 4));
}

TEST_F(RestClientTest, RetriesConnectionFailuresOfSafeVerbs) {
  auto client = Make();
  http_->Then(absl::UnavailableError("http GET x: Connection reset by peer"));
  http_->Then(200);
  absl::StatusOr<HttpResponse> r;
  RunWithClock([&] { r = client->Send({.path = "/x"}); });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(http_->sent().size(), 2u);
}

TEST_F(RestClientTest, DoesNotRepeatAPostThatMayHaveBeenApplied) {
  auto client = Make();
  http_->Then(500);
  auto r = client->Send({.method = "POST", .path = "/x"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 500);
  EXPECT_EQ(http_->sent().size(), 1u);

  http_->Then(absl::UnavailableError("http POST x: Connection reset by peer"));
  EXPECT_FALSE(client->Send({.method = "POST", .path = "/x"}).ok());
  EXPECT_EQ(http_->sent().size(), 2u);

  // Refused before anything was sent: safe to retry.
  http_->Then(absl::UnavailableError("http POST x: Failed to connect to api.test port 6443"));
  http_->Then(201);
  absl::StatusOr<HttpResponse> retried;
  RunWithClock([&] { retried = client->Send({.method = "POST", .path = "/x"}); });
  ASSERT_TRUE(retried.ok());
  EXPECT_EQ(retried->status, 201);
}

TEST_F(RestClientTest, TooManyRequestsCanBeAnAnswer) {
  auto client = Make();
  http_->Then(429, {{"Retry-After", "10"}});
  auto r = client->Send({.method = "POST", .path = "/evict", .retry_too_many_requests = false});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 429);
  EXPECT_EQ(http_->sent().size(), 1u);
}

TEST_F(RestClientTest, UnauthorizedRereadsARotatedTokenFile) {
  const std::filesystem::path token =
      std::filesystem::temp_directory_path() / ("gpuop-rest-token-" + std::to_string(getpid()));
  std::ofstream(token) << "old";
  auto client = Make({.token_file = token});
  http_->Then(200);
  ASSERT_TRUE(client->Send({.path = "/x"}).ok());
  EXPECT_EQ(HeaderOf(http_->sent()[0], "Authorization"), "Bearer old");

  // Rotated to a token of the same size with the same modification time: only the 401 makes the
  // client look again.
  const auto mtime = std::filesystem::last_write_time(token);
  std::ofstream(token, std::ios::trunc) << "new";
  std::filesystem::last_write_time(token, mtime);
  http_->Then(401);
  http_->Then(200);
  auto r = client->Send({.path = "/x"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
  ASSERT_EQ(http_->sent().size(), 3u);
  EXPECT_EQ(HeaderOf(http_->sent()[1], "Authorization"), "Bearer old");
  EXPECT_EQ(HeaderOf(http_->sent()[2], "Authorization"), "Bearer new");
  std::filesystem::remove(token);
}

TEST_F(RestClientTest, RateLimitSpacesRequests) {
  RestConfig config{.server = "https://api.test"};
  auto client = RestClient::Create(config, {.clock = &clock_, .http = http_});
  ASSERT_TRUE(client.ok());
  // Default 50 qps, burst 100 in the config: 100 immediate requests, then 20 ms apart.
  const absl::Duration waited = RunWithClock([&] {
    for (int i = 0; i < 110; ++i) ASSERT_TRUE((*client)->Send({.path = "/x"}).ok());
  });
  EXPECT_GE(waited, absl::Milliseconds(200));
  EXPECT_EQ(http_->sent().size(), 110u);
}

TEST_F(RestClientTest, MetricsCountRequestsAndRetries) {
  metrics::Registry registry;
  auto client = RestClient::Create({.server = "https://api.test", .qps = 0},
                                   {.clock = &clock_, .http = http_, .metrics = &registry});
  ASSERT_TRUE(client.ok());
  http_->Then(503);
  http_->Then(200);
  RunWithClock([&] { ASSERT_TRUE((*client)->Send({.path = "/x"}).ok()); });
  const std::string text = registry.Render();
  EXPECT_NE(text.find("gpuop_kube_requests_total{verb=\"GET\",code=\"503\"} 1"), std::string::npos)
      << text;
  EXPECT_NE(text.find("gpuop_kube_requests_total{verb=\"GET\",code=\"200\"} 1"), std::string::npos);
  EXPECT_NE(text.find("gpuop_kube_request_retries_total{verb=\"GET\"} 1"), std::string::npos);
}

}  // namespace
}  // namespace gpuop::kube
