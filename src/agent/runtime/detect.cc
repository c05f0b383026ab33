#include "agent/runtime/detect.h"

#include <cerrno>

#include <sys/stat.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/files.h"
#include "common/status_macros.h"

namespace gpuop::agent::runtime {
namespace {

namespace fs = std::filesystem;

struct Probe {
  Runtime runtime;
  std::vector<std::string> sockets;  // host paths under /run
  std::vector<std::string> configs;  // host paths
};

const std::vector<Probe>& Probes() {
  static const std::vector<Probe>* probes = new std::vector<Probe>{
      {Runtime::kContainerd, {"/run/containerd/containerd.sock"}, {"/etc/containerd/config.toml"}},
      {Runtime::kCrio, {"/run/crio/crio.sock"}, {"/etc/crio"}},
      {Runtime::kDocker, {"/run/docker.sock"}, {"/etc/docker/daemon.json"}},
  };
  return *probes;
}

// True when `host_path` exists under `root`; errors other than "absent" are returned.
absl::StatusOr<bool> Exists(const fs::path& root, const std::string& host_path) {
  struct stat st;
  if (lstat((root / fs::path(host_path).relative_path()).c_str(), &st) == 0) return true;
  if (errno == ENOENT || errno == ENOTDIR) return false;
  return absl::ErrnoToStatus(errno, absl::StrCat("stat ", host_path));
}

// The value after a key: "=v", ": v", ': "v"'.
std::string ValueAfter(absl::string_view rest) {
  rest = absl::StripLeadingAsciiWhitespace(rest);
  if (!rest.empty() && (rest.front() == '=' || rest.front() == ':')) rest.remove_prefix(1);
  rest = absl::StripLeadingAsciiWhitespace(rest);
  if (!rest.empty() && (rest.front() == '"' || rest.front() == '\'')) rest.remove_prefix(1);
  size_t end = 0;
  while (end < rest.size() && !absl::ascii_isspace(rest[end]) && rest[end] != '"' &&
         rest[end] != '\'') {
    ++end;
  }
  return std::string(rest.substr(0, end));
}

// The runtime endpoint in one kubelet file (flags or YAML), or "" when it names none. Commented
// lines are skipped.
std::string EndpointIn(absl::string_view content) {
  for (absl::string_view line : absl::StrSplit(content, '\n')) {
    if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(line), "#")) continue;
    for (absl::string_view key : {"--container-runtime-endpoint", "containerRuntimeEndpoint"}) {
      const size_t pos = line.find(key);
      if (pos == absl::string_view::npos) continue;
      std::string endpoint = ValueAfter(line.substr(pos + key.size()));
      if (!endpoint.empty()) return endpoint;
    }
  }
  return "";
}

// The runtime that listens on the kubelet's `endpoint`, or nullopt for one gpuop does not
// configure.
std::optional<Runtime> RuntimeOfEndpoint(absl::string_view endpoint) {
  absl::string_view path = endpoint;
  absl::ConsumePrefix(&path, "unix://");
  std::string normal(path);
  if (absl::StartsWith(normal, "/var/run/")) normal = normal.substr(4);
  if (normal == "/run/containerd/containerd.sock") return Runtime::kContainerd;
  if (normal == "/run/crio/crio.sock") return Runtime::kCrio;
  if (normal == "/run/cri-dockerd.sock" || normal == "/run/dockershim.sock") {
    return Runtime::kDocker;
  }
  return std::nullopt;
}

absl::StatusOr<std::optional<std::pair<std::string, std::string>>> KubeletEndpoint(
    const fs::path& root) {
  for (const char* file : {"/var/lib/kubelet/kubeadm-flags.env", "/etc/default/kubelet",
                           "/etc/sysconfig/kubelet", "/var/lib/kubelet/config.yaml"}) {
    absl::StatusOr<std::optional<std::string>> content =
        common::ReadFileIfExists(root / fs::path(file).relative_path());
    if (!content.ok()) {
      return absl::Status(content.status().code(),
                          absl::StrCat("read ", file, ": ", content.status().message()));
    }
    if (!content->has_value()) continue;
    std::string endpoint = EndpointIn(**content);
    if (!endpoint.empty()) return std::make_pair(std::string(file), std::move(endpoint));
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<Detection> DetectRuntime(const fs::path& host_root) {
  Detection detection;
  std::error_code ec;
  // Under a mounted host root, var/run is usually an absolute link to /run that would resolve in
  // this container; the /run probes cover it.
  const bool var_run_is_link = fs::is_symlink(host_root / "var/run", ec);
  std::vector<Runtime> with_socket;
  for (const Probe& probe : Probes()) {
    bool found = false;
    bool socket = false;
    for (const std::string& path : probe.sockets) {
      std::vector<std::string> spellings = {path};
      if (!var_run_is_link) spellings.push_back(absl::StrCat("/var", path));
      for (const std::string& spelling : spellings) {
        GPUOP_ASSIGN_OR_RETURN(const bool exists, Exists(host_root, spelling));
        if (!exists) continue;
        detection.evidence.push_back(
            absl::StrCat(RuntimeName(probe.runtime), ": socket ", spelling));
        found = socket = true;
        break;
      }
    }
    for (const std::string& path : probe.configs) {
      GPUOP_ASSIGN_OR_RETURN(const bool exists, Exists(host_root, path));
      if (!exists) continue;
      detection.evidence.push_back(absl::StrCat(RuntimeName(probe.runtime), ": ", path));
      found = true;
    }
    if (found) detection.present.push_back(probe.runtime);
    if (socket) with_socket.push_back(probe.runtime);
  }

  GPUOP_ASSIGN_OR_RETURN(const auto kubelet, KubeletEndpoint(host_root));
  if (kubelet.has_value()) {
    const auto& [file, endpoint] = *kubelet;
    detection.evidence.push_back(absl::StrCat("kubelet: ", endpoint, " (", file, ")"));
    detection.runtime = RuntimeOfEndpoint(endpoint);
    if (!detection.runtime.has_value()) {
      detection.reason = absl::StrCat("the kubelet uses ", endpoint, " (", file,
                                      "), which is not a runtime gpuop configures");
    } else {
      detection.reason = absl::StrCat("the kubelet uses ", RuntimeName(*detection.runtime), " (",
                                      endpoint, " in ", file, ")");
    }
    return detection;
  }

  auto names = [](const std::vector<Runtime>& runtimes) {
    std::vector<std::string> out;
    for (const Runtime runtime : runtimes) out.push_back(RuntimeName(runtime));
    return absl::StrJoin(out, ", ");
  };
  if (detection.present.empty()) {
    detection.reason =
        "no container runtime found (no containerd, CRI-O or Docker socket or "
        "configuration)";
    return detection;
  }
  if (detection.present.size() == 1) {
    detection.runtime = detection.present.front();
    detection.reason = absl::StrCat("only ", RuntimeName(*detection.runtime), " is present");
    return detection;
  }
  if (with_socket.size() == 1) {
    detection.runtime = with_socket.front();
    detection.reason =
        absl::StrCat("several runtimes are present (", names(detection.present),
                     ") and the kubelet's endpoint is unknown; chose ",
                     RuntimeName(*detection.runtime), ", the only one with a socket");
    return detection;
  }
  const std::vector<Runtime>& candidates = with_socket.empty() ? detection.present : with_socket;
  detection.runtime = candidates.front();
  detection.reason =
      absl::StrCat("several runtimes are present (", names(detection.present),
                   ") and the kubelet's endpoint is unknown; chose ",
                   RuntimeName(*detection.runtime), " by preference (containerd > CRI-O > Docker)",
                   with_socket.empty() ? "; none has a socket" : "");
  return detection;
}

}  // namespace gpuop::agent::runtime
