#include "test/cluster/test_api.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "kube/transport/curl_http_client.h"

namespace gpuop::test {
namespace {

absl::StatusOr<std::string> Slurp(const std::filesystem::path& path) {
  std::ifstream file(path);
  if (!file) return absl::NotFoundError(absl::StrCat("read ", path.string()));
  std::ostringstream out;
  out << file.rdbuf();
  return out.str();
}

absl::Status NotOk(absl::string_view method, absl::string_view path, const ApiResponse& r) {
  std::string message = r.raw;
  if (r.body.is_object() && r.body.contains("message")) message = r.body["message"].dump();
  return absl::UnknownError(absl::StrCat(method, " ", path, ": HTTP ", r.status, ": ", message));
}

}  // namespace

absl::StatusOr<TestApi> TestApi::Connect(const ControlPlane& control_plane) {
  const Pki& pki = control_plane.pki();
  GPUOP_ASSIGN_OR_RETURN(std::string ca, Slurp(pki.ca_cert));
  GPUOP_ASSIGN_OR_RETURN(std::string cert, Slurp(pki.admin_cert));
  GPUOP_ASSIGN_OR_RETURN(std::string key, Slurp(pki.admin_key));
  GPUOP_ASSIGN_OR_RETURN(std::unique_ptr<kube::CurlHttpClient> http,
                         kube::CurlHttpClient::Create(
                             {.tls = {.ca_pem = ca, .client_cert_pem = cert, .client_key_pem = key},
                              .user_agent = "gpuop-test-api"}));
  return TestApi(control_plane.server(), std::move(http));
}

absl::StatusOr<ApiResponse> TestApi::Request(absl::string_view method, absl::string_view path,
                                             const nlohmann::json* body,
                                             absl::string_view content_type) {
  kube::HttpRequest request{.method = std::string(method),
                            .url = absl::StrCat(server_, path),
                            .headers = {{"Accept", "application/json"}}};
  if (body != nullptr) {
    request.headers.emplace_back("Content-Type", std::string(content_type));
    request.body = body->dump();
  }
  GPUOP_ASSIGN_OR_RETURN(kube::HttpResponse response, http_->Send(request));
  ApiResponse out{.status = response.status,
                  .body = nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false),
                  .raw = std::move(response.body)};
  if (out.body.is_discarded()) out.body = nullptr;
  return out;
}

absl::StatusOr<nlohmann::json> TestApi::Get(absl::string_view path) {
  GPUOP_ASSIGN_OR_RETURN(ApiResponse r, Request("GET", path));
  if (r.status / 100 != 2) return NotOk("GET", path, r);
  return r.body;
}

absl::StatusOr<nlohmann::json> TestApi::Create(absl::string_view path,
                                               const nlohmann::json& object) {
  GPUOP_ASSIGN_OR_RETURN(ApiResponse r, Request("POST", path, &object));
  if (r.status / 100 != 2) return NotOk("POST", path, r);
  return r.body;
}

absl::Status TestApi::Delete(absl::string_view path) {
  GPUOP_ASSIGN_OR_RETURN(ApiResponse r, Request("DELETE", path));
  if (r.status / 100 != 2 && r.status != 404) return NotOk("DELETE", path, r);
  return absl::OkStatus();
}

absl::Status WaitUntil(absl::string_view what, absl::Duration timeout,
                       const std::function<absl::StatusOr<bool>()>& check) {
  const absl::Time deadline = absl::Now() + timeout;
  std::string last = "condition still false";
  while (true) {
    absl::StatusOr<bool> done = check();
    if (done.ok() && *done) return absl::OkStatus();
    if (!done.ok()) last = done.status().ToString();
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("waiting for ", what, " (", absl::FormatDuration(timeout), "): ", last));
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
}

}  // namespace gpuop::test
