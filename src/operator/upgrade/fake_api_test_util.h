#ifndef GPUOP_OPERATOR_UPGRADE_FAKE_API_TEST_UTIL_H_
#define GPUOP_OPERATOR_UPGRADE_FAKE_API_TEST_UTIL_H_

// A scripted API server at the HTTP boundary, for tests of code that writes through
// kube::Client: it records every request and answers from a script (200 "{}" by default), so a
// test can check the exact writes.

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "kube/client/client.h"
#include "kube/transport/http_client.h"
#include "kube/transport/rest_client.h"

namespace gpuop::op::upgrade::testing {

struct Request {
  std::string method;
  std::string path;  // without the server, with the query
  std::string body;
  nlohmann::json Json() const {
    return body.empty() ? nlohmann::json() : nlohmann::json::parse(body);
  }
};

class ScriptedApi final : public kube::HttpClient {
 public:
  static constexpr char kServer[] = "https://api.test";

  // Requests whose method is `method` and whose path contains `path_part` get this answer.
  void Answer(std::string method, std::string path_part, int status, nlohmann::json body) {
    absl::MutexLock lock(&mu_);
    answers_.push_back({std::move(method), std::move(path_part), status, body.dump()});
  }

  std::vector<Request> requests() const {
    absl::MutexLock lock(&mu_);
    return requests_;
  }
  // The requests other than GETs (the writes).
  std::vector<Request> writes() const {
    std::vector<Request> out;
    for (const Request& r : requests()) {
      if (r.method != "GET") out.push_back(r);
    }
    return out;
  }

  absl::StatusOr<kube::HttpResponse> Send(const kube::HttpRequest& request) override {
    absl::MutexLock lock(&mu_);
    std::string path = request.url.substr(std::string(kServer).size());
    requests_.push_back({request.method, path, request.body});
    for (const Answer_& a : answers_) {
      if (a.method == request.method && absl::StrContains(path, a.path_part)) {
        return kube::HttpResponse{.status = a.status, .body = a.body};
      }
    }
    return kube::HttpResponse{.status = 200, .body = "{}"};
  }
  absl::StatusOr<kube::HttpResponse> Stream(const kube::HttpRequest&, const DataHandler&,
                                            std::stop_token) override {
    return kube::HttpResponse{.status = 500, .body = "no watches here"};
  }

 private:
  struct Answer_ {
    std::string method;
    std::string path_part;
    int status;
    std::string body;
  };
  mutable absl::Mutex mu_;
  std::vector<Answer_> answers_ ABSL_GUARDED_BY(mu_);
  std::vector<Request> requests_ ABSL_GUARDED_BY(mu_);
};

// A kube::Client that talks to `api`, without retries or rate limits.
inline std::unique_ptr<kube::Client> ClientFor(std::shared_ptr<ScriptedApi> api) {
  auto rest = kube::RestClient::Create({.server = ScriptedApi::kServer, .qps = 0},
                                       {.http = std::move(api), .max_retries = 0});
  if (!rest.ok()) return nullptr;
  return std::make_unique<kube::Client>(std::shared_ptr<kube::RestClient>(*std::move(rest)));
}

// An API server Status body, as the server sends with an error.
inline nlohmann::json StatusBody(int code, const std::string& reason, const std::string& message) {
  return {{"kind", "Status"},   {"apiVersion", "v1"}, {"status", "Failure"},
          {"message", message}, {"reason", reason},   {"code", code}};
}

}  // namespace gpuop::op::upgrade::testing

#endif  // GPUOP_OPERATOR_UPGRADE_FAKE_API_TEST_UTIL_H_
