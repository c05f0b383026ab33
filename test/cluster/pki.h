#ifndef GPUOP_TEST_CLUSTER_PKI_H_
#define GPUOP_TEST_CLUSTER_PKI_H_

#include <filesystem>
#include <string>

#include "absl/status/statusor.h"

namespace gpuop::test {

// The certificates and keys of one test control plane, as files in one directory. Everything is
// signed by one CA (as kwokctl and local-up-cluster do); keys are ECDSA P-256.
struct Pki {
  std::filesystem::path dir;
  std::filesystem::path ca_cert, ca_key;
  // Serving certificate for 127.0.0.1, localhost and the in-cluster names of the API server;
  // also used by the controller-manager and scheduler for their health endpoints.
  std::filesystem::path serving_cert, serving_key;
  // Client certificate of user "gpuop-test-admin" in group "system:masters".
  std::filesystem::path admin_cert, admin_key;
  // Key pair that signs and verifies service-account tokens.
  std::filesystem::path service_account_key, service_account_pub;
};

// Generates a fresh PKI into `dir` (created if missing). Private keys are written mode 0600.
[[nodiscard]] absl::StatusOr<Pki> GeneratePki(const std::filesystem::path& dir);

// Issues a client certificate signed by the PKI's CA for `user` in `group` (group may be empty),
// written as <dir>/<file_stem>.crt and .key. Returns the certificate's path.
[[nodiscard]] absl::StatusOr<std::filesystem::path> IssueClientCert(const Pki& pki,
                                                                    const std::string& user,
                                                                    const std::string& group,
                                                                    const std::string& file_stem);

}  // namespace gpuop::test

#endif  // GPUOP_TEST_CLUSTER_PKI_H_
