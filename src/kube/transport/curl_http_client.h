#ifndef GPUOP_KUBE_TRANSPORT_CURL_HTTP_CLIENT_H_
#define GPUOP_KUBE_TRANSPORT_CURL_HTTP_CLIENT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "kube/transport/http_client.h"

namespace gpuop::kube {

// TLS material, as PEM text. Server certificates are always verified: against `ca_pem` when
// set, otherwise against the system's trust store.
struct TlsOptions {
  std::string ca_pem;
  std::string client_cert_pem;
  std::string client_key_pem;
};

struct CurlHttpClientOptions {
  TlsOptions tls;
  std::string user_agent;
  absl::Duration connect_timeout = absl::Seconds(10);
};

// HttpClient over libcurl. Connections are kept alive and reused across requests: finished
// handles go back to a pool and keep their connection cache.
class CurlHttpClient final : public HttpClient {
 public:
  // Fails with InvalidArgument when a client certificate is given without its key or the
  // reverse.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<CurlHttpClient>> Create(
      CurlHttpClientOptions options);
  ~CurlHttpClient() override;

  [[nodiscard]] absl::StatusOr<HttpResponse> Send(const HttpRequest& request) override;
  [[nodiscard]] absl::StatusOr<HttpResponse> Stream(const HttpRequest& request,
                                                    const DataHandler& on_data,
                                                    std::stop_token stop) override;

 private:
  absl::StatusOr<HttpResponse> Perform(const HttpRequest& request, const DataHandler* on_data,
                                       const std::stop_token* stop);
  explicit CurlHttpClient(CurlHttpClientOptions options) : options_(std::move(options)) {}

  void* Acquire();
  void Release(void* handle);

  const CurlHttpClientOptions options_;
  absl::Mutex mu_;
  std::vector<void*> idle_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_TRANSPORT_CURL_HTTP_CLIENT_H_
