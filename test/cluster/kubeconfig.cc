#include "test/cluster/kubeconfig.h"

#include <fstream>

#include <yaml-cpp/yaml.h>

#include "absl/strings/str_cat.h"

namespace gpuop::test {

absl::Status WriteKubeconfig(const std::filesystem::path& path, const KubeconfigSpec& spec) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "apiVersion" << YAML::Value << "v1";
  out << YAML::Key << "kind" << YAML::Value << "Config";
  out << YAML::Key << "clusters" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << spec.context_name;
  out << YAML::Key << "cluster" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "server" << YAML::Value << spec.server;
  out << YAML::Key << "certificate-authority" << YAML::Value
      << std::filesystem::absolute(spec.ca_cert).string();
  out << YAML::EndMap << YAML::EndMap << YAML::EndSeq;
  out << YAML::Key << "users" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << spec.context_name;
  out << YAML::Key << "user" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "client-certificate" << YAML::Value
      << std::filesystem::absolute(spec.client_cert).string();
  out << YAML::Key << "client-key" << YAML::Value
      << std::filesystem::absolute(spec.client_key).string();
  out << YAML::EndMap << YAML::EndMap << YAML::EndSeq;
  out << YAML::Key << "contexts" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << spec.context_name;
  out << YAML::Key << "context" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "cluster" << YAML::Value << spec.context_name;
  out << YAML::Key << "user" << YAML::Value << spec.context_name;
  out << YAML::EndMap << YAML::EndMap << YAML::EndSeq;
  out << YAML::Key << "current-context" << YAML::Value << spec.context_name;
  out << YAML::EndMap;

  const std::filesystem::path tmp = std::filesystem::path(path).concat(".tmp");
  {
    std::ofstream file(tmp, std::ios::trunc);
    file << out.c_str() << "\n";
    if (!file) return absl::InternalError(absl::StrCat("write kubeconfig ", tmp.string()));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("write kubeconfig ", path.string(), ": ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace gpuop::test
