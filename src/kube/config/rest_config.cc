#include "kube/config/rest_config.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"

namespace gpuop::kube {
namespace {

namespace fs = std::filesystem;

absl::StatusOr<std::string> ReadWholeFile(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::NotFoundError(absl::StrCat("open ", path.string(), ": ", std::strerror(errno)));
  }
  std::ostringstream out;
  out << file.rdbuf();
  return out.str();
}

// Reads kubeconfig sections with errors that name the file and the field.
class KubeconfigReader {
 public:
  KubeconfigReader(fs::path path, fs::path base_dir)
      : path_(std::move(path)), base_dir_(std::move(base_dir)) {}

  absl::Status Error(const std::string& field, absl::string_view problem) const {
    return absl::InvalidArgumentError(
        absl::StrCat("kubeconfig ", path_.string(), ": ", field, ": ", problem));
  }

  // The string at `node[key]`, "" when absent; an error when present but not a string.
  absl::StatusOr<std::string> String(const YAML::Node& node, const std::string& field,
                                     const std::string& key) const {
    const YAML::Node value = node[key];
    if (!value || value.IsNull()) return std::string();
    if (!value.IsScalar()) return Error(absl::StrCat(field, ".", key), "must be a string");
    return value.as<std::string>();
  }

  // Finds the entry named `name` in the list `section` (clusters, users, contexts) and returns
  // its inner map (the value of `inner`) together with the entry's field path.
  absl::StatusOr<std::pair<YAML::Node, std::string>> Named(const YAML::Node& root,
                                                           const std::string& section,
                                                           const std::string& inner,
                                                           const std::string& name,
                                                           const std::string& referrer) const {
    const YAML::Node list = root[section];
    if (list && !list.IsNull() && !list.IsSequence()) return Error(section, "must be a list");
    for (size_t i = 0; list && i < list.size(); ++i) {
      const std::string field = absl::StrCat(section, "[", i, "]");
      if (!list[i].IsMap()) return Error(field, "must be a map");
      GPUOP_ASSIGN_OR_RETURN(std::string entry_name, String(list[i], field, "name"));
      if (entry_name != name) continue;
      const YAML::Node body = list[i][inner];
      if (!body || !body.IsMap()) return Error(absl::StrCat(field, ".", inner), "must be a map");
      return std::make_pair(body, absl::StrCat(field, ".", inner));
    }
    return Error(referrer, absl::StrCat("no entry named \"", name, "\" in ", section));
  }

  // PEM from either `<key>-data` (base64) or `<key>` (a file path).
  absl::StatusOr<std::string> Pem(const YAML::Node& node, const std::string& field,
                                  const std::string& key) const {
    GPUOP_ASSIGN_OR_RETURN(std::string data, String(node, field, key + "-data"));
    if (!data.empty()) {
      std::string decoded;
      if (!absl::Base64Unescape(data, &decoded)) {
        return Error(absl::StrCat(field, ".", key, "-data"), "not valid base64");
      }
      return decoded;
    }
    GPUOP_ASSIGN_OR_RETURN(std::string file, String(node, field, key));
    if (file.empty()) return std::string();
    absl::StatusOr<std::string> content = ReadWholeFile(Resolve(file));
    if (!content.ok()) return Error(absl::StrCat(field, ".", key), content.status().message());
    return content;
  }

  fs::path Resolve(const std::string& file) const {
    const fs::path p(file);
    return p.is_absolute() ? p : base_dir_ / p;
  }

 private:
  fs::path path_;
  fs::path base_dir_;
};

absl::StatusOr<RestConfig> Parse(const YAML::Node& root, const KubeconfigReader& r,
                                 absl::string_view wanted_context) {
  if (!root.IsMap()) return r.Error("(document)", "must be a map");
  std::string context_name(wanted_context);
  if (context_name.empty()) {
    GPUOP_ASSIGN_OR_RETURN(context_name, r.String(root, "(document)", "current-context"));
    if (context_name.empty()) return r.Error("current-context", "not set and no context given");
  }
  GPUOP_ASSIGN_OR_RETURN(auto context,
                         r.Named(root, "contexts", "context", context_name, "current-context"));
  const auto& [ctx, ctx_field] = context;
  GPUOP_ASSIGN_OR_RETURN(std::string cluster_name, r.String(ctx, ctx_field, "cluster"));
  GPUOP_ASSIGN_OR_RETURN(std::string user_name, r.String(ctx, ctx_field, "user"));
  GPUOP_ASSIGN_OR_RETURN(std::string ns, r.String(ctx, ctx_field, "namespace"));
  if (cluster_name.empty()) return r.Error(ctx_field + ".cluster", "must be set");

  RestConfig config;
  if (!ns.empty()) config.default_namespace = ns;

  GPUOP_ASSIGN_OR_RETURN(
      auto cluster, r.Named(root, "clusters", "cluster", cluster_name, ctx_field + ".cluster"));
  const auto& [cl, cl_field] = cluster;
  GPUOP_ASSIGN_OR_RETURN(config.server, r.String(cl, cl_field, "server"));
  if (config.server.empty()) return r.Error(cl_field + ".server", "must be set");
  if (!absl::StartsWith(config.server, "https://") && !absl::StartsWith(config.server, "http://")) {
    return r.Error(cl_field + ".server", absl::StrCat("\"", config.server, "\" is not a URL"));
  }
  while (absl::EndsWith(config.server, "/")) config.server.pop_back();
  if (cl["insecure-skip-tls-verify"] &&
      cl["insecure-skip-tls-verify"].as<std::string>() == "true") {
    return r.Error(cl_field + ".insecure-skip-tls-verify",
                   "not supported: gpuop always verifies the server certificate");
  }
  GPUOP_ASSIGN_OR_RETURN(std::string tls_server_name, r.String(cl, cl_field, "tls-server-name"));
  if (!tls_server_name.empty()) return r.Error(cl_field + ".tls-server-name", "not supported");
  GPUOP_ASSIGN_OR_RETURN(config.ca_pem, r.Pem(cl, cl_field, "certificate-authority"));

  if (!user_name.empty()) {
    GPUOP_ASSIGN_OR_RETURN(auto user,
                           r.Named(root, "users", "user", user_name, ctx_field + ".user"));
    const auto& [u, u_field] = user;
    for (const char* unsupported : {"exec", "auth-provider", "username", "password"}) {
      if (u[unsupported]) {
        return r.Error(absl::StrCat(u_field, ".", unsupported),
                       "not supported; use a client certificate or a token");
      }
    }
    GPUOP_ASSIGN_OR_RETURN(config.client_cert_pem, r.Pem(u, u_field, "client-certificate"));
    GPUOP_ASSIGN_OR_RETURN(config.client_key_pem, r.Pem(u, u_field, "client-key"));
    if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
      return r.Error(u_field, "client-certificate and client-key must be given together");
    }
    GPUOP_ASSIGN_OR_RETURN(config.bearer_token, r.String(u, u_field, "token"));
    GPUOP_ASSIGN_OR_RETURN(std::string token_file, r.String(u, u_field, "tokenFile"));
    if (!token_file.empty()) {
      config.token_file = r.Resolve(token_file);
      if (!fs::exists(config.token_file)) {
        return r.Error(u_field + ".tokenFile",
                       absl::StrCat(config.token_file.string(), " does not exist"));
      }
    }
  }
  return config;
}

}  // namespace

absl::StatusOr<RestConfig> ParseKubeconfig(absl::string_view text, const fs::path& path,
                                           const fs::path& base_dir, absl::string_view context) {
  KubeconfigReader reader(path, base_dir);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return reader.Error(absl::StrCat("line ", e.mark.line + 1), e.msg);
  }
  absl::StatusOr<RestConfig> config;
  try {
    config = Parse(root, reader, context);
  } catch (const YAML::Exception& e) {
    return reader.Error(absl::StrCat("line ", e.mark.line + 1), e.msg);
  }
  if (config.ok()) config->source = absl::StrCat("kubeconfig ", path.string());
  return config;
}

absl::StatusOr<RestConfig> LoadKubeconfig(const fs::path& path, absl::string_view context) {
  absl::StatusOr<std::string> text = ReadWholeFile(path);
  if (!text.ok()) return absl::NotFoundError(absl::StrCat("kubeconfig: ", text.status().message()));
  return ParseKubeconfig(*text, path, fs::absolute(path).parent_path(), context);
}

InClusterEnvironment InClusterEnvironment::FromProcess() {
  InClusterEnvironment env;
  if (const char* host = std::getenv("KUBERNETES_SERVICE_HOST")) env.service_host = host;
  if (const char* port = std::getenv("KUBERNETES_SERVICE_PORT")) env.service_port = port;
  return env;
}

absl::StatusOr<RestConfig> InClusterConfig(const InClusterEnvironment& env) {
  if (env.service_host.empty() || env.service_port.empty()) {
    return absl::FailedPreconditionError(
        "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
  }
  RestConfig config;
  const bool ipv6 = absl::StrContains(env.service_host, ':');
  config.server = absl::StrCat("https://", ipv6 ? "[" : "", env.service_host, ipv6 ? "]" : "", ":",
                               env.service_port);
  config.token_file = env.service_account_dir / "token";
  absl::StatusOr<std::string> token = ReadWholeFile(config.token_file);
  if (!token.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("in-cluster config: service-account token: ", token.status().message()));
  }
  absl::StatusOr<std::string> ca = ReadWholeFile(env.service_account_dir / "ca.crt");
  if (!ca.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("in-cluster config: service-account CA: ", ca.status().message()));
  }
  config.ca_pem = *std::move(ca);
  if (absl::StatusOr<std::string> ns = ReadWholeFile(env.service_account_dir / "namespace");
      ns.ok() && !absl::StripAsciiWhitespace(*ns).empty()) {
    config.default_namespace = std::string(absl::StripAsciiWhitespace(*ns));
  }
  config.source = absl::StrCat("in-cluster service account ", env.service_account_dir.string());
  return config;
}

absl::StatusOr<RestConfig> LoadDefaultConfig(const fs::path& explicit_path) {
  if (!explicit_path.empty()) return LoadKubeconfig(explicit_path);
  if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
    const std::vector<std::string> paths = absl::StrSplit(env, ':', absl::SkipEmpty());
    if (!paths.empty()) return LoadKubeconfig(paths.front());
  }
  InClusterEnvironment in_cluster = InClusterEnvironment::FromProcess();
  if (!in_cluster.service_host.empty()) return InClusterConfig(in_cluster);
  const char* home = std::getenv("HOME");
  return LoadKubeconfig(fs::path(home != nullptr ? home : "/root") / ".kube" / "config");
}

}  // namespace gpuop::kube
