#ifndef GPUOP_TEST_CLUSTER_KUBECONFIG_H_
#define GPUOP_TEST_CLUSTER_KUBECONFIG_H_

#include <filesystem>
#include <string>

#include "absl/status/status.h"

namespace gpuop::test {

struct KubeconfigSpec {
  std::string server;  // "https://127.0.0.1:6443"
  std::filesystem::path ca_cert;
  std::filesystem::path client_cert;
  std::filesystem::path client_key;
  std::string context_name = "gpuop-test";
};

// Writes a kubeconfig with one cluster, one user and one context (the current one) that refers
// to the certificate files by absolute path.
[[nodiscard]] absl::Status WriteKubeconfig(const std::filesystem::path& path,
                                           const KubeconfigSpec& spec);

}  // namespace gpuop::test

#endif  // GPUOP_TEST_CLUSTER_KUBECONFIG_H_
