#ifndef GPUOP_TEST_FAKES_KUBELET_REGISTRATION_RULES_H_
#define GPUOP_TEST_FAKES_KUBELET_REGISTRATION_RULES_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

// The checks the kubelet's device manager applies to a RegisterRequest before it dials the
// plugin. Each returns OK or InvalidArgument with a message naming the value and the rule.
namespace gpuop::fakes {

// The device plugin API version the kubelet supports: the only accepted
// RegisterRequest.version.
inline constexpr char kDevicePluginApiVersion[] = "v1beta1";

// OK when `version` is kDevicePluginApiVersion.
[[nodiscard]] absl::Status ValidateDevicePluginVersion(absl::string_view version);

// OK when `name` is an extended resource name, as kubelet's IsExtendedResourceName decides:
// "<domain>/<name>" where the domain is a DNS subdomain and the name a qualified-name part
// (at most 63 characters of [A-Za-z0-9-_.], alphanumeric at both ends), "requests.<name>"
// is a valid quota name, the name does not start with "requests." and is not in the
// kubernetes.io namespace (any domain containing "kubernetes.io/"). Domains k8s.io and
// *.k8s.io, reserved for Kubernetes as well, are refused too.
[[nodiscard]] absl::Status ValidateExtendedResourceName(absl::string_view name);

// OK when `endpoint` names a file directly inside the device plugin directory: not empty, no
// '/', not "." or "..", and not the kubelet's own socket or checkpoint.
[[nodiscard]] absl::Status ValidateDevicePluginEndpoint(absl::string_view endpoint);

}  // namespace gpuop::fakes

#endif  // GPUOP_TEST_FAKES_KUBELET_REGISTRATION_RULES_H_
