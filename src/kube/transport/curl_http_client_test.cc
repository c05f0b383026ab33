#include "kube/transport/curl_http_client.h"

#include <gtest/gtest.h>

#include "test/cluster/ports.h"

namespace gpuop::kube {
namespace {

TEST(CurlHttpClientTest, ClientCertificateNeedsItsKey) {
  auto client = CurlHttpClient::Create({.tls = {.client_cert_pem = "cert"}});
  EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
  client = CurlHttpClient::Create({.tls = {.client_key_pem = "key"}});
  EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CurlHttpClientTest, RejectsNonHttpUrls) {
  auto client = CurlHttpClient::Create({});
  ASSERT_TRUE(client.ok());
  auto response = (*client)->Send({.url = "file:///etc/passwd"});
  EXPECT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument) << response.status();
}

TEST(CurlHttpClientTest, ConnectionRefusedIsUnavailable) {
  // A port that was just free has no listener.
  auto ports = test::PickFreeLoopbackPorts(1);
  ASSERT_TRUE(ports.ok());
  auto client = CurlHttpClient::Create({});
  ASSERT_TRUE(client.ok());
  auto response =
      (*client)->Send({.url = "https://127.0.0.1:" + std::to_string((*ports)[0]) + "/readyz"});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable) << response.status();
  EXPECT_NE(response.status().message().find("127.0.0.1"), std::string::npos);
}

TEST(HttpResponseTest, HeaderLookupIgnoresCase) {
  HttpResponse response{.headers = {{"Content-Type", "application/json"}, {"Retry-After", "3"}}};
  EXPECT_EQ(response.Header("content-type"), "application/json");
  EXPECT_EQ(response.Header("RETRY-AFTER"), "3");
  EXPECT_EQ(response.Header("missing"), "");
}

}  // namespace
}  // namespace gpuop::kube
