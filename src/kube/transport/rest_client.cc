#include "kube/transport/rest_client.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/version.h"
#include "kube/transport/curl_http_client.h"

namespace gpuop::kube {
namespace {

bool SafeToRepeat(const std::string& method) {
  return method == "GET" || method == "HEAD" || method == "PUT" || method == "DELETE" ||
         method == "PATCH";
}

// Whether the request may have reached the server before the connection failed. Failures to
// connect or to set up TLS mean it did not.
bool MayHaveBeenSent(const absl::Status& status) {
  const absl::string_view m = status.message();
  return !(absl::StrContains(m, "Failed to connect") || absl::StrContains(m, "Could not resolve") ||
           absl::StrContains(m, "Connection refused") || absl::StrContains(m, "SSL") ||
           absl::StrContains(m, "Connection timed out"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<RestClient>> RestClient::Create(RestConfig config,
                                                               RestClientOptions options) {
  if (config.server.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(config.source, ": no server"));
  }
  if (options.http == nullptr) {
    GPUOP_ASSIGN_OR_RETURN(
        std::unique_ptr<CurlHttpClient> http,
        CurlHttpClient::Create({.tls = {.ca_pem = config.ca_pem,
                                        .client_cert_pem = config.client_cert_pem,
                                        .client_key_pem = config.client_key_pem},
                                .user_agent = common::UserAgent(options.component)}));
    options.http = std::move(http);
  }
  return std::unique_ptr<RestClient>(new RestClient(std::move(config), std::move(options)));
}

RestClient::RestClient(RestConfig config, RestClientOptions options)
    : config_(std::move(config)),
      options_(std::move(options)),
      limiter_(config_.qps, config_.burst, *options_.clock) {
  if (!config_.token_file.empty()) {
    token_ = TokenSource::File(config_.token_file);
  } else if (!config_.bearer_token.empty()) {
    token_ = TokenSource::Static(config_.bearer_token);
  }
  if (metrics::Registry* r = options_.metrics) {
    requests_ = &r->AddCounter("gpuop_kube_requests_total",
                               "Requests to the Kubernetes API server by verb and HTTP code "
                               "(code 0: no response).",
                               {"verb", "code"});
    latency_ = &r->AddHistogram("gpuop_kube_request_duration_seconds",
                                "Latency of Kubernetes API requests, per attempt.", {"verb"},
                                metrics::ExponentialBuckets(0.001, 2, 15));
    retries_ = &r->AddCounter("gpuop_kube_request_retries_total",
                              "Kubernetes API requests retried, by verb.", {"verb"});
    limiter_wait_ = &r->AddHistogram("gpuop_kube_rate_limiter_wait_seconds",
                                     "Time requests waited for the client-side rate limiter.", {},
                                     metrics::ExponentialBuckets(0.001, 4, 8))
                         .Get();
  }
}

absl::StatusOr<HttpRequest> RestClient::Build(const RestRequest& request) {
  HttpRequest http{
      .method = request.method,
      .url = absl::StrCat(config_.server, request.path),
      .headers = {{"Accept", request.accept}},
      .body = request.body,
      .timeout = request.timeout > absl::ZeroDuration() ? request.timeout : config_.timeout};
  if (!request.content_type.empty())
    http.headers.emplace_back("Content-Type", request.content_type);
  GPUOP_ASSIGN_OR_RETURN(std::string token, token_.Token());
  if (!token.empty()) http.headers.emplace_back("Authorization", absl::StrCat("Bearer ", token));
  return http;
}

void RestClient::Record(const std::string& verb, int code, absl::Duration latency) {
  if (requests_ == nullptr) return;
  requests_->With({verb, absl::StrCat(code)}).Inc();
  latency_->With({verb}).Observe(absl::ToDoubleSeconds(latency));
}

absl::Duration RestClient::NextDelay(int attempt, const HttpResponse* response) {
  if (response != nullptr) {
    if (auto after = ParseRetryAfter(response->Header("Retry-After"))) {
      return std::min(*after, options_.max_retry_after);
    }
  }
  absl::MutexLock lock(&random_mu_);
  return BackoffDelay(options_.backoff, attempt, random_);
}

absl::StatusOr<HttpResponse> RestClient::Send(const RestRequest& request) {
  bool token_refreshed = false;
  for (int attempt = 0;; ++attempt) {
    const absl::Duration waited = limiter_.Wait();
    if (limiter_wait_ != nullptr) limiter_wait_->Observe(absl::ToDoubleSeconds(waited));
    GPUOP_ASSIGN_OR_RETURN(HttpRequest http, Build(request));
    const absl::Time start = options_.clock->Now();
    absl::StatusOr<HttpResponse> response = options_.http->Send(http);
    Record(request.method, response.ok() ? response->status : 0, options_.clock->Now() - start);

    bool retry = false;
    if (!response.ok()) {
      retry = response.status().code() == absl::StatusCode::kUnavailable &&
              (SafeToRepeat(request.method) || !MayHaveBeenSent(response.status()));
    } else if (response->status == 401 && token_.from_file() && !token_refreshed) {
      // The kubelet may have rotated the token since it was read.
      token_.Invalidate();
      token_refreshed = true;
      --attempt;
      continue;
    } else {
      const int code = response->status;
      retry = (code == 429 && request.retry_too_many_requests) || code == 503 ||
              (code >= 500 && SafeToRepeat(request.method));
    }
    if (!retry || attempt >= options_.max_retries) return response;
    if (retries_ != nullptr) retries_->With({request.method}).Inc();
    options_.clock->SleepFor(NextDelay(attempt, response.ok() ? &*response : nullptr));
  }
}

absl::StatusOr<HttpResponse> RestClient::Stream(const RestRequest& request,
                                                const HttpClient::DataHandler& on_data,
                                                std::stop_token stop) {
  const absl::Duration waited = limiter_.Wait();
  if (limiter_wait_ != nullptr) limiter_wait_->Observe(absl::ToDoubleSeconds(waited));
  GPUOP_ASSIGN_OR_RETURN(HttpRequest http, Build(request));
  const absl::Time start = options_.clock->Now();
  absl::StatusOr<HttpResponse> response = options_.http->Stream(http, on_data, std::move(stop));
  Record("WATCH", response.ok() ? response->status : 0, options_.clock->Now() - start);
  if (response.ok() && response->status == 401 && token_.from_file()) token_.Invalidate();
  return response;
}

}  // namespace gpuop::kube
