#include "common/http/internal/request_parser.h"

#include <random>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuop::http::internal {
namespace {

using Kind = ParseResult::Kind;

TEST(HttpRequestParserTest, ParsesRequestLineAndFields) {
  Request request;
  const std::string head =
      "GET /metrics?name%5B%5D=x HTTP/1.1\r\nHost: node:9400\r\nAccept:  text/plain \r\n"
      "X-Empty:\r\n\r\nbody";
  const ParseResult result = ParseRequestHead(head, 64, request);
  ASSERT_EQ(result.kind, Kind::kComplete) << result.reason;
  EXPECT_EQ(result.consumed, head.size() - 4);
  EXPECT_EQ(request.method, "GET");
  EXPECT_EQ(request.target, "/metrics?name%5B%5D=x");
  EXPECT_EQ(request.path, "/metrics");
  EXPECT_EQ(request.query, "name%5B%5D=x");
  EXPECT_EQ(request.version_minor, 1);
  EXPECT_EQ(request.Header("host"), "node:9400");
  EXPECT_EQ(request.Header("accept"), "text/plain");
  EXPECT_EQ(request.Header("x-empty"), "");
  EXPECT_EQ(request.Header("missing"), "");
}

TEST(HttpRequestParserTest, BareLineFeedsAndLeadingEmptyLinesAreAccepted) {
  Request request;
  const ParseResult result = ParseRequestHead("\r\n\nHEAD / HTTP/1.0\nHost: a\n\n", 64, request);
  ASSERT_EQ(result.kind, Kind::kComplete) << result.reason;
  EXPECT_EQ(request.method, "HEAD");
  EXPECT_EQ(request.path, "/");
  EXPECT_EQ(request.version_minor, 0);
}

TEST(HttpRequestParserTest, IncompleteUntilTheEmptyLine) {
  const std::string full = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  for (size_t n = 0; n < full.size(); ++n) {
    Request request;
    EXPECT_EQ(ParseRequestHead(full.substr(0, n), 64, request).kind, Kind::kIncomplete) << n;
  }
}

struct ErrorCase {
  const char* name;
  std::string head;
  int status;
};

TEST(HttpRequestParserTest, RejectsMalformedHeads) {
  const ErrorCase cases[] = {
      {"no target", "GET\r\n\r\n", 400},
      {"two spaces", "GET  / HTTP/1.1\r\n\r\n", 400},
      {"absolute form", "GET http://x/ HTTP/1.1\r\n\r\n", 400},
      {"asterisk", "OPTIONS * HTTP/1.1\r\n\r\n", 400},
      {"bad method", "G(T / HTTP/1.1\r\n\r\n", 400},
      {"bad version", "GET / HTTX/1.1\r\n\r\n", 400},
      {"long version", "GET / HTTP/1.10\r\n\r\n", 400},
      {"http2", "GET / HTTP/2.0\r\n\r\n", 505},
      {"control in target", std::string("GET /a\x01 HTTP/1.1\r\n\r\n"), 400},
      {"obs-fold", "GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n", 400},
      {"space before colon", "GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400},
      {"no colon", "GET / HTTP/1.1\r\nHost\r\n\r\n", 400},
      {"empty name", "GET / HTTP/1.1\r\n: x\r\n\r\n", 400},
      {"stray CR", "GET / HTTP/1.1\r\nA: b\rc\r\n\r\n", 400},
      {"NUL", std::string("GET / HTTP/1.1\r\nA: b") + '\0' + "c\r\n\r\n", 400},
      {"control in value", "GET / HTTP/1.1\r\nA: b\x1b\r\n\r\n", 400},
      {"too many fields", "GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", 431},
  };
  for (const ErrorCase& c : cases) {
    Request request;
    const ParseResult result = ParseRequestHead(c.head, 2, request);
    EXPECT_EQ(result.kind, Kind::kError) << c.name;
    EXPECT_EQ(result.status, c.status) << c.name << ": " << result.reason;
    EXPECT_FALSE(result.reason.empty()) << c.name;
  }
}

TEST(HttpRequestParserTest, ArbitraryBytesNeverCrash) {
  std::mt19937 random(42);
  const std::string seed = "GET /metrics HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n";
  for (int i = 0; i < 20000; ++i) {
    std::string input = seed;
    const int mutations = 1 + static_cast<int>(random() % 8);
    for (int m = 0; m < mutations; ++m) {
      const size_t at = random() % (input.size() + 1);
      switch (random() % 3) {
        case 0:
          if (at < input.size()) input[at] = static_cast<char>(random() % 256);
          break;
        case 1:
          input.insert(at, 1, static_cast<char>(random() % 256));
          break;
        default:
          if (at < input.size()) input.erase(at, 1);
      }
    }
    Request request;
    const ParseResult result = ParseRequestHead(input, 8, request);
    if (result.kind == Kind::kComplete) {
      EXPECT_LE(result.consumed, input.size());
      EXPECT_FALSE(request.path.empty());
      EXPECT_EQ(request.path.front(), '/');
    }
    if (result.kind == Kind::kError) {
      EXPECT_THAT(result.status, ::testing::AnyOf(400, 431, 505));
    }
  }
}

}  // namespace
}  // namespace gpuop::http::internal
