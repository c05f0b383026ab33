#ifndef GPUOP_TEST_CLUSTER_TEST_API_H_
#define GPUOP_TEST_CLUSTER_TEST_API_H_

#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "kube/transport/http_client.h"
#include "test/cluster/control_plane.h"

namespace gpuop::test {

struct ApiResponse {
  int status = 0;
  nlohmann::json body;  // null when the body is not JSON
  std::string raw;
};

// Plain JSON-over-HTTPS access to a test control plane as its admin user, for tests that set up
// and inspect cluster state. The product's own API client lives in src/kube; this stays minimal
// on purpose so a harness failure cannot be confused with a client bug.
class TestApi {
 public:
  [[nodiscard]] static absl::StatusOr<TestApi> Connect(const ControlPlane& control_plane);

  // Sends a request and returns whatever the server answered.
  [[nodiscard]] absl::StatusOr<ApiResponse> Request(
      absl::string_view method, absl::string_view path, const nlohmann::json* body = nullptr,
      absl::string_view content_type = "application/json");

  // Request() that also fails unless the status is 2xx; the error carries status and message.
  [[nodiscard]] absl::StatusOr<nlohmann::json> Get(absl::string_view path);
  [[nodiscard]] absl::StatusOr<nlohmann::json> Create(absl::string_view path,
                                                      const nlohmann::json& object);
  // Deletes; a 404 counts as success.
  [[nodiscard]] absl::Status Delete(absl::string_view path);

 private:
  TestApi(std::string server, std::shared_ptr<kube::HttpClient> http)
      : server_(std::move(server)), http_(std::move(http)) {}

  std::string server_;
  std::shared_ptr<kube::HttpClient> http_;
};

// Calls `check` every 200 ms until it returns true, returning OK; fails with DeadlineExceeded
// naming `what` and the last error or "false" when `timeout` passes first.
[[nodiscard]] absl::Status WaitUntil(absl::string_view what, absl::Duration timeout,
                                     const std::function<absl::StatusOr<bool>()>& check);

}  // namespace gpuop::test

#endif  // GPUOP_TEST_CLUSTER_TEST_API_H_
