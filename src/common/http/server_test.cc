// The HTTP server over real sockets on loopback (port 0): routing, methods, limits, deadlines
// and shutdown.
#include "common/http/server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "kube/transport/curl_http_client.h"

namespace gpuop::http {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// A raw client socket, for what a well-behaved client library would not send.
class RawClient {
 public:
  explicit RawClient(int port) : fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  }
  ~RawClient() { close(fd_); }

  bool connected() const { return connected_; }
  bool Send(absl::string_view data) {
    return send(fd_, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size());
  }
  // Everything the server sends until it closes, or until `timeout` passes (then `closed` is
  // false).
  std::string ReadToEnd(absl::Duration timeout, bool* closed = nullptr) {
    std::string out;
    const absl::Time deadline = absl::Now() + timeout;
    char buffer[65536];
    while (true) {
      pollfd p{.fd = fd_, .events = POLLIN, .revents = 0};
      const int64_t left = absl::ToInt64Milliseconds(deadline - absl::Now());
      if (left <= 0 || poll(&p, 1, static_cast<int>(left)) <= 0) break;
      const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) {
        if (closed != nullptr) *closed = true;
        return out;
      }
      out.append(buffer, static_cast<size_t>(n));
    }
    if (closed != nullptr) *closed = false;
    return out;
  }

 private:
  int fd_;
  bool connected_ = false;
};

class HttpServerTest : public ::testing::Test {
 protected:
  void Start(ServerOptions options = {}) {
    if (options.host.empty()) options.host = "127.0.0.1";
    server_ = std::make_unique<Server>(options);
    server_->Handle("/metrics", [](const Request&) {
      Response r;
      r.content_type = "text/plain; version=0.0.4; charset=utf-8";
      r.shared_body = std::make_shared<const std::string>("metric 1\n");
      r.body = "tail 2\n";
      return r;
    });
    server_->Handle("/big", [this](const Request&) {
      Response r;
      r.shared_body = big_;
      return r;
    });
    server_->Handle("/echo", [](const Request& request) {
      Response r = Response::Text(
          201, absl::StrCat(request.path, "|", request.query, "|", request.Header("x-test")));
      r.headers.emplace_back("X-Reply", "yes");
      r.headers.emplace_back("X-Bad", "a\r\nInjected: 1");
      return r;
    });
    const absl::Status started = server_->Start();
    ASSERT_TRUE(started.ok()) << started;
    ASSERT_GT(server_->port(), 0);
    auto client = kube::CurlHttpClient::Create({});
    ASSERT_TRUE(client.ok());
    client_ = *std::move(client);
  }

  absl::StatusOr<kube::HttpResponse> Get(const std::string& path,
                                         const std::string& method = "GET") {
    return client_->Send({.method = method,
                          .url = absl::StrCat("http://127.0.0.1:", server_->port(), path),
                          .headers = {{"X-Test", "hello"}},
                          .timeout = absl::Seconds(10)});
  }

  std::shared_ptr<const std::string> big_ =
      std::make_shared<const std::string>(std::string(8 << 20, 'x'));
  std::unique_ptr<Server> server_;
  std::unique_ptr<kube::CurlHttpClient> client_;
};

TEST_F(HttpServerTest, ServesARegisteredPathWithTypeAndLength) {
  Start();
  auto response = Get("/metrics");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "metric 1\ntail 2\n");
  EXPECT_EQ(response->Header("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(response->Header("Content-Length"), "16");
  EXPECT_EQ(response->Header("Connection"), "close");
  EXPECT_EQ(server_->stats().requests, 1);
}

TEST_F(HttpServerTest, PassesPathQueryAndHeadersAndDropsInjectedHeaders) {
  Start();
  auto response = Get("/echo?a=1");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 201);
  EXPECT_EQ(response->body, "/echo|a=1|hello\n");
  EXPECT_EQ(response->Header("X-Reply"), "yes");
  EXPECT_EQ(response->Header("X-Bad"), "");
  EXPECT_EQ(response->Header("Injected"), "");
}

TEST_F(HttpServerTest, UnknownPathIs404AndOtherMethodsAre405) {
  Start();
  auto missing = Get("/nope");
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status, 404);
  auto post = Get("/metrics", "POST");
  ASSERT_TRUE(post.ok());
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(post->Header("Allow"), "GET, HEAD");
  EXPECT_EQ(server_->stats().bad_requests, 1);
}

TEST_F(HttpServerTest, HeadSendsTheLengthButNoBody) {
  Start();
  RawClient client(server_->port());
  ASSERT_TRUE(client.connected());
  ASSERT_TRUE(client.Send("HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
  bool closed = false;
  const std::string reply = client.ReadToEnd(absl::Seconds(5), &closed);
  EXPECT_TRUE(closed);
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(reply, HasSubstr("Content-Length: 16\r\n"));
  EXPECT_EQ(reply.substr(reply.size() - 4), "\r\n\r\n");
}

TEST_F(HttpServerTest, LargeSharedBodyArrivesWhole) {
  Start();
  auto response = Get("/big");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->body.size(), big_->size());
  EXPECT_TRUE(response->body == *big_);
}

TEST_F(HttpServerTest, MalformedAndOversizedRequestsGetTheirStatus) {
  Start({.max_request_bytes = 1024});
  struct Case {
    std::string request;
    std::string status_line;
  };
  const Case cases[] = {
      {"GARBAGE\r\n\r\n", "HTTP/1.1 400 Bad Request"},
      {"GET /metrics HTTP/2.0\r\n\r\n", "HTTP/1.1 505 HTTP Version Not Supported"},
      {"GET /metrics HTTP/1.1\r\nX: " + std::string(2000, 'a') + "\r\n\r\n",
       "HTTP/1.1 431 Request Header Fields Too Large"},
      {"GET /" + std::string(4000, 'a'), "HTTP/1.1 431 Request Header Fields Too Large"},
  };
  for (const Case& c : cases) {
    RawClient client(server_->port());
    ASSERT_TRUE(client.Send(c.request));
    bool closed = false;
    EXPECT_THAT(client.ReadToEnd(absl::Seconds(5), &closed), StartsWith(c.status_line));
    EXPECT_TRUE(closed);
  }
  EXPECT_EQ(server_->stats().bad_requests, 4);
}

TEST_F(HttpServerTest, SlowClientIsDroppedAtTheReadDeadlineWhileOthersAreServed) {
  Start({.read_timeout = absl::Milliseconds(300)});
  RawClient slow(server_->port());
  ASSERT_TRUE(slow.Send("GET /metrics HTTP/1.1\r\nHo"));
  // The server keeps answering others while the slow client dawdles.
  auto response = Get("/metrics");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  bool closed = false;
  EXPECT_EQ(slow.ReadToEnd(absl::Seconds(10), &closed), "");
  EXPECT_TRUE(closed);
  EXPECT_EQ(server_->stats().timeouts, 1);
}

TEST_F(HttpServerTest, ConnectionsOverTheLimitGet503) {
  // The two connections stay open however slowly the machine runs (their half request never
  // times out during the test).
  Start({.max_connections = 2, .read_timeout = absl::Minutes(5)});
  RawClient a(server_->port()), b(server_->port());
  ASSERT_TRUE(a.Send("G"));
  ASSERT_TRUE(b.Send("G"));
  // Wait until both are accepted: a request served on a third connection would be refused.
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (server_->stats().connections < 2 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_EQ(server_->stats().connections, 2);
  RawClient c(server_->port());
  EXPECT_THAT(c.ReadToEnd(absl::Seconds(5)), StartsWith("HTTP/1.1 503 Service Unavailable"));
  EXPECT_EQ(server_->stats().rejected, 1);
}

TEST_F(HttpServerTest, StopIsPromptWithIdleConnectionsOpen) {
  Start({.read_timeout = absl::Hours(1)});
  RawClient a(server_->port()), b(server_->port());
  ASSERT_TRUE(a.Send("GET /metrics HTTP/1.1\r\n"));
  const absl::Time start = absl::Now();
  server_->Stop();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  bool closed = false;
  a.ReadToEnd(absl::Seconds(5), &closed);
  EXPECT_TRUE(closed);
  server_->Stop();  // idempotent
  RawClient late(server_->port());
  EXPECT_FALSE(late.connected());
}

TEST_F(HttpServerTest, ABusyPortIsUnavailableAndRestartIsRefused) {
  Start();
  Server other({.host = "127.0.0.1", .port = server_->port()});
  const absl::Status status = other.Start();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(absl::StrCat(server_->port())));
  EXPECT_EQ(server_->Start().code(), absl::StatusCode::kFailedPrecondition);
  Server bad({.host = "localhost"});
  EXPECT_EQ(bad.Start().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(HttpServerTest, EveryAddressIncludesIpv4Loopback) {
  Server any({.host = "", .port = 0});
  any.Handle("/healthz", [](const Request&) { return Response::Text(200, "ok"); });
  ASSERT_TRUE(any.Start().ok());
  auto client = kube::CurlHttpClient::Create({});
  ASSERT_TRUE(client.ok());
  auto response =
      (*client)->Send({.url = absl::StrCat("http://127.0.0.1:", any.port(), "/healthz")});
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->body, "ok\n");
}

TEST(HttpListenAddressTest, ParsesHostAndPort) {
  using Pair = std::pair<std::string, int>;
  EXPECT_EQ(*ParseListenAddress(":9400"), Pair("", 9400));
  EXPECT_EQ(*ParseListenAddress("0.0.0.0:9400"), Pair("0.0.0.0", 9400));
  EXPECT_EQ(*ParseListenAddress("127.0.0.1:0"), Pair("127.0.0.1", 0));
  EXPECT_EQ(*ParseListenAddress("[::1]:80"), Pair("::1", 80));
  for (const char* bad : {"9400", ":x", ":70000", "::1:80", "host:-1", ""}) {
    EXPECT_EQ(ParseListenAddress(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace gpuop::http
