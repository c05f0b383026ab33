#ifndef GPUOP_KUBE_CONFIG_REST_CONFIG_H_
#define GPUOP_KUBE_CONFIG_REST_CONFIG_H_

#include <filesystem>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace gpuop::kube {

// How to reach and authenticate to one API server. Certificates and keys are held as PEM text;
// a token file is re-read whenever it changes (bound service-account tokens rotate).
struct RestConfig {
  // "https://host:port", no trailing slash.
  std::string server;
  // CA bundle that verifies the server; the system trust store when empty.
  std::string ca_pem;
  std::string client_cert_pem;
  std::string client_key_pem;
  // A static bearer token, or a file holding one (the file wins when both are set).
  std::string bearer_token;
  std::filesystem::path token_file;
  // The namespace of the current context (or of the pod, in cluster); "default" otherwise.
  std::string default_namespace = "default";
  // Client-side rate limit: sustained queries per second and burst.
  double qps = 50;
  int burst = 100;
  // Per-request timeout (watches use their own).
  absl::Duration timeout = absl::Seconds(30);
  // Where the configuration came from, for error messages ("kubeconfig /root/.kube/config").
  std::string source;
};

// Reads a kubeconfig file and resolves `context` (the file's current-context when empty).
// Relative file paths in it are relative to the file's directory. Errors name the file and the
// field: "kubeconfig /x: users[0].user.client-key: open /y: No such file or directory".
[[nodiscard]] absl::StatusOr<RestConfig> LoadKubeconfig(const std::filesystem::path& path,
                                                        absl::string_view context = "");

// Parses kubeconfig text; `path` is for messages, `base_dir` resolves relative paths.
[[nodiscard]] absl::StatusOr<RestConfig> ParseKubeconfig(absl::string_view text,
                                                         const std::filesystem::path& path,
                                                         const std::filesystem::path& base_dir,
                                                         absl::string_view context = "");

// Where an in-cluster configuration comes from: the service host and port from the environment
// and the service-account directory mounted into every pod.
struct InClusterEnvironment {
  std::string service_host;  // $KUBERNETES_SERVICE_HOST
  std::string service_port;  // $KUBERNETES_SERVICE_PORT
  std::filesystem::path service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";

  // Reads the variables from the process environment.
  static InClusterEnvironment FromProcess();
};

// The configuration of a pod's own service account: server https://host:port, its CA, its token
// file (re-read on rotation) and its namespace. FailedPrecondition when not running in a cluster.
[[nodiscard]] absl::StatusOr<RestConfig> InClusterConfig(const InClusterEnvironment& env);

// The usual search: `explicit_path` if given, else $KUBECONFIG (first entry), else in-cluster
// when KUBERNETES_SERVICE_HOST is set, else ~/.kube/config.
[[nodiscard]] absl::StatusOr<RestConfig> LoadDefaultConfig(
    const std::filesystem::path& explicit_path = {});

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_CONFIG_REST_CONFIG_H_
