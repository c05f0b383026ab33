#ifndef GPUOP_TEST_INTEGRATION_NETWORK_PARTITION_H_
#define GPUOP_TEST_INTEGRATION_NETWORK_PARTITION_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/synchronization/mutex.h"
#include "kube/client/client.h"
#include "kube/config/rest_config.h"
#include "kube/transport/curl_http_client.h"
#include "test/cluster/cluster_environment.h"

namespace gpuop::test {

// Simulates a network partition between a component and the real API server: while cut, every
// request fails the way an unreachable server does (Unavailable) without leaving the process;
// otherwise requests go to the API server over real HTTPS.
class PartitionableHttpClient final : public kube::HttpClient {
 public:
  explicit PartitionableHttpClient(std::unique_ptr<kube::HttpClient> inner)
      : inner_(std::move(inner)) {}

  void Cut() { cut_ = true; }
  void Heal() { cut_ = false; }
  int refused() const { return refused_; }

  // The bodies of the PATCH requests sent so far.
  std::vector<std::string> patches() const {
    absl::MutexLock lock(&mu_);
    return patches_;
  }

  absl::StatusOr<kube::HttpResponse> Send(const kube::HttpRequest& request) override {
    if (cut_) return Refuse(request);
    if (request.method == "PATCH") {
      absl::MutexLock lock(&mu_);
      patches_.push_back(request.body);
    }
    return inner_->Send(request);
  }
  absl::StatusOr<kube::HttpResponse> Stream(const kube::HttpRequest& request,
                                            const DataHandler& on_data,
                                            std::stop_token stop) override {
    if (cut_) return Refuse(request);
    return inner_->Stream(request, on_data, stop);
  }

 private:
  absl::Status Refuse(const kube::HttpRequest& request) {
    ++refused_;
    return absl::UnavailableError(
        absl::StrCat(request.method, " ", request.url, ": connection refused (partitioned)"));
  }

  std::unique_ptr<kube::HttpClient> inner_;
  std::atomic<bool> cut_{false};
  std::atomic<int> refused_{0};
  mutable absl::Mutex mu_;
  std::vector<std::string> patches_ ABSL_GUARDED_BY(mu_);
};

// An admin client for the test control plane whose network `partition` controls. No retries:
// the component under test does its own.
inline std::unique_ptr<kube::Client> PartitionableAdminClient(
    std::shared_ptr<PartitionableHttpClient>& partition) {
  absl::StatusOr<kube::RestConfig> config =
      kube::LoadKubeconfig(ClusterEnvironment::Get().kubeconfig());
  if (!config.ok()) {
    ADD_FAILURE() << config.status();
    return nullptr;
  }
  config->qps = 0;
  auto curl = kube::CurlHttpClient::Create({.tls = {.ca_pem = config->ca_pem,
                                                    .client_cert_pem = config->client_cert_pem,
                                                    .client_key_pem = config->client_key_pem}});
  if (!curl.ok()) {
    ADD_FAILURE() << curl.status();
    return nullptr;
  }
  partition = std::make_shared<PartitionableHttpClient>(*std::move(curl));
  auto rest = kube::RestClient::Create(
      *config, {.http = partition, .component = "partitioned-test", .max_retries = 0});
  if (!rest.ok()) {
    ADD_FAILURE() << rest.status();
    return nullptr;
  }
  return std::make_unique<kube::Client>(std::shared_ptr<kube::RestClient>(*std::move(rest)));
}

}  // namespace gpuop::test

#endif  // GPUOP_TEST_INTEGRATION_NETWORK_PARTITION_H_
