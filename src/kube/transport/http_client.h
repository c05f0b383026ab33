#ifndef GPUOP_KUBE_TRANSPORT_HTTP_CLIENT_H_
#define GPUOP_KUBE_TRANSPORT_HTTP_CLIENT_H_

#include <functional>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace gpuop::kube {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method = "GET";
  // An absolute URL: "https://127.0.0.1:6443/api/v1/namespaces".
  std::string url;
  HttpHeaders headers;
  std::string body;
  // Deadline for the whole exchange, connection included.
  absl::Duration timeout = absl::Seconds(30);
};

struct HttpResponse {
  int status = 0;
  HttpHeaders headers;
  std::string body;

  // The value of the first header named `name` (case-insensitive), or "" when absent.
  absl::string_view Header(absl::string_view name) const;
};

// Sends one HTTP request and returns the server's answer. Any HTTP status is a response, not an
// error; a Status is returned only when no response arrived: Unavailable for connection and TLS
// failures, DeadlineExceeded for timeouts, InvalidArgument for a malformed request.
//
// Implementations are thread-safe.
class HttpClient {
 public:
  virtual ~HttpClient() = default;
  [[nodiscard]] virtual absl::StatusOr<HttpResponse> Send(const HttpRequest& request) = 0;

  // Receives a body piece by piece as it arrives. Returns false to end the exchange.
  using DataHandler = std::function<bool(absl::string_view data)>;

  // Sends a request whose response body is a long-lived stream (a watch). For a 2xx status the
  // body is handed to `on_data` as it arrives and the returned response has an empty body;
  // otherwise the body is collected into the response as Send() does. Returns when the server
  // ends the body, when `on_data` returns false, or soon after `stop` is requested (the
  // response then has the status received so far). `request.timeout` bounds the whole stream.
  [[nodiscard]] virtual absl::StatusOr<HttpResponse> Stream(const HttpRequest& request,
                                                            const DataHandler& on_data,
                                                            std::stop_token stop) = 0;
};

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_TRANSPORT_HTTP_CLIENT_H_
