#include "test/fakes/kubelet/registration_rules.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "test/fakes/kubelet/fake_kubelet.h"

namespace gpuop::fakes {
namespace {

// [a-z0-9]([-a-z0-9]*[a-z0-9])?
bool IsDns1123Label(absl::string_view label) {
  if (label.empty() || label.size() > 63) return false;
  for (char c : label) {
    if (!absl::ascii_islower(c) && !absl::ascii_isdigit(c) && c != '-') return false;
  }
  return label.front() != '-' && label.back() != '-';
}

// Dot-separated DNS labels, at most 253 characters in all.
bool IsDns1123Subdomain(absl::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  for (absl::string_view label : absl::StrSplit(name, '.')) {
    if (!IsDns1123Label(label)) return false;
  }
  return true;
}

// The name part of a qualified name: ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], at most 63.
bool IsQualifiedNamePart(absl::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return absl::ascii_isalnum(name.front()) && absl::ascii_isalnum(name.back());
}

absl::Status InvalidName(absl::string_view name, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("the ResourceName \"", name, "\" is invalid: ", why));
}

}  // namespace

absl::Status ValidateDevicePluginVersion(absl::string_view version) {
  if (version == kDevicePluginApiVersion) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("requested API version \"", version,
                                                 "\" is not supported by kubelet; supported "
                                                 "versions are [\"",
                                                 kDevicePluginApiVersion, "\"]"));
}

absl::Status ValidateExtendedResourceName(absl::string_view name) {
  const size_t slash = name.find('/');
  if (slash == absl::string_view::npos) {
    return InvalidName(name, "an extended resource name needs a domain prefix (\"vendor.com/x\")");
  }
  if (absl::StrContains(name, "kubernetes.io/")) {
    return InvalidName(name, "the kubernetes.io namespace is reserved for native resources");
  }
  if (absl::StartsWith(name, "requests.")) {
    return InvalidName(name, "the \"requests.\" prefix is reserved for quota");
  }
  const absl::string_view domain = name.substr(0, slash);
  const absl::string_view part = name.substr(slash + 1);
  if (domain == "k8s.io" || absl::EndsWith(domain, ".k8s.io")) {
    return InvalidName(name, "the k8s.io namespace is reserved for Kubernetes");
  }
  if (!IsDns1123Subdomain(absl::StrCat("requests.", domain))) {
    return InvalidName(name,
                       "the prefix must be a DNS subdomain (lowercase alphanumerics, '-' "
                       "and '.', at most 244 characters)");
  }
  if (!IsQualifiedNamePart(part)) {
    return InvalidName(name,
                       "the name after '/' must be 1-63 characters of [A-Za-z0-9-_.], "
                       "starting and ending with an alphanumeric");
  }
  return absl::OkStatus();
}

absl::Status ValidateDevicePluginEndpoint(absl::string_view endpoint) {
  auto invalid = [endpoint](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("invalid endpoint \"", endpoint, "\": ", why));
  };
  if (endpoint.empty()) return invalid("empty");
  if (absl::StrContains(endpoint, "/")) {
    return invalid("must be a file name inside the device plugin directory, not a path");
  }
  if (endpoint == "." || endpoint == "..") return invalid("not a file name");
  if (endpoint == kKubeletSocketName || endpoint == kKubeletCheckpointName) {
    return invalid("the kubelet's own file");
  }
  return absl::OkStatus();
}

}  // namespace gpuop::fakes
