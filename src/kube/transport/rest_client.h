#ifndef GPUOP_KUBE_TRANSPORT_REST_CLIENT_H_
#define GPUOP_KUBE_TRANSPORT_REST_CLIENT_H_

#include <memory>
#include <stop_token>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/random/random.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "kube/config/rest_config.h"
#include "kube/transport/backoff.h"
#include "kube/transport/http_client.h"
#include "kube/transport/rate_limiter.h"
#include "kube/transport/token_source.h"
#include "metrics/registry.h"

namespace gpuop::kube {

// One request to the API server, by path.
struct RestRequest {
  std::string method = "GET";
  // Path and query: "/api/v1/namespaces/default/pods?limit=500".
  std::string path;
  std::string body;
  std::string content_type;
  std::string accept = "application/json";
  // Zero means the configuration's default timeout.
  absl::Duration timeout = absl::ZeroDuration();
  // Whether a 429 is retried. Off where 429 is an answer rather than throttling (an eviction
  // refused by a disruption budget).
  bool retry_too_many_requests = true;
};

struct RestClientOptions {
  const common::Clock* clock = &common::Clock::Real();
  // The HTTP implementation; a CurlHttpClient for the configuration when null.
  std::shared_ptr<HttpClient> http;
  // Names the program in the User-Agent: "gpuop-<component>/<version>".
  std::string component = "client";
  // Retries after the first attempt for retryable failures.
  int max_retries = 5;
  BackoffPolicy backoff;
  // Longest Retry-After honoured; longer requests wait this long.
  absl::Duration max_retry_after = absl::Seconds(30);
  // Request metrics (count by verb and code, latency, retries, rate-limiter wait); none if null.
  metrics::Registry* metrics = nullptr;
};

// Sends requests to one API server: applies the client-side rate limit, authenticates (client
// certificate or bearer token, re-read when it rotates), and retries transient failures with
// exponential backoff and jitter, honouring Retry-After:
//   - 429 and 503, and connection failures before the request was sent: every verb;
//   - other 5xx and connection failures after sending: only verbs that are safe to repeat
//     (GET, HEAD, PUT, DELETE, and PATCH, which the server applies to the current object).
// A 401 with a token file re-reads the token once and retries.
//
// Thread-safe.
class RestClient {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<RestClient>> Create(
      RestConfig config, RestClientOptions options = {});

  // Sends the request (with retries) and returns the final response, whatever its status.
  // Fails only when no response could be had: Unavailable, DeadlineExceeded.
  [[nodiscard]] absl::StatusOr<HttpResponse> Send(const RestRequest& request);

  // Opens a long-lived response (a watch) once, without retries: see HttpClient::Stream.
  [[nodiscard]] absl::StatusOr<HttpResponse> Stream(const RestRequest& request,
                                                    const HttpClient::DataHandler& on_data,
                                                    std::stop_token stop);

  const RestConfig& config() const { return config_; }
  const common::Clock& clock() const { return *options_.clock; }

 private:
  RestClient(RestConfig config, RestClientOptions options);

  absl::StatusOr<HttpRequest> Build(const RestRequest& request);
  void Record(const std::string& verb, int code, absl::Duration latency);
  absl::Duration NextDelay(int attempt, const HttpResponse* response);

  const RestConfig config_;
  const RestClientOptions options_;
  TokenSource token_;
  TokenBucket limiter_;
  absl::Mutex random_mu_;
  absl::BitGen random_ ABSL_GUARDED_BY(random_mu_);

  metrics::Family<metrics::Counter>* requests_ = nullptr;
  metrics::Family<metrics::Histogram>* latency_ = nullptr;
  metrics::Family<metrics::Counter>* retries_ = nullptr;
  metrics::Histogram* limiter_wait_ = nullptr;
};

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_TRANSPORT_REST_CLIENT_H_
