#include "agent/cdi/inject/device_names.h"

#include <algorithm>

#include "agent/cdi/name_rules.h"

namespace gpuop::agent::cdi::inject {
namespace {

using name_rules::kMaxClassLength;
using name_rules::kMaxVendorLength;

Status Fail(std::string_view what, std::string_view text, std::string_view rule) {
  return Status::Error("CDI " + std::string(what) + " \"" + std::string(text) + "\" " +
                       std::string(rule));
}

// The vendor and class rules, which differ only in their name and length limit.
Status ValidateQualifierPart(std::string_view what, std::string_view text, size_t max_length) {
  if (text.empty()) return Status::Error("CDI " + std::string(what) + " is empty");
  if (const std::string problem = name_rules::QualifierProblem(text, max_length);
      !problem.empty()) {
    return Fail(what, text, problem);
  }
  return Status::Ok();
}

std::string_view Trim(std::string_view text) {
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

}  // namespace

Status ValidateVendor(std::string_view vendor) {
  return ValidateQualifierPart("vendor", vendor, kMaxVendorLength);
}

Status ValidateClass(std::string_view device_class) {
  return ValidateQualifierPart("class", device_class, kMaxClassLength);
}

Status ValidateDeviceName(std::string_view name) {
  if (name.empty()) return Status::Error("CDI device name is empty");
  if (const std::string problem = name_rules::DeviceNameProblem(name); !problem.empty()) {
    return Fail("device name", name, problem);
  }
  return Status::Ok();
}

Status ValidateKind(std::string_view kind) {
  const size_t slash = kind.find('/');
  if (slash == std::string_view::npos) {
    return Fail("kind", kind, "is not <vendor>/<class>");
  }
  if (Status s = ValidateVendor(kind.substr(0, slash)); !s.ok()) return s;
  return ValidateClass(kind.substr(slash + 1));
}

StatusOr<QualifiedName> ParseQualifiedName(std::string_view text) {
  const size_t equals = text.find('=');
  if (equals == std::string_view::npos) {
    return Fail("device", text, "is not a fully qualified name <vendor>/<class>=<name>");
  }
  const std::string_view kind = text.substr(0, equals);
  const size_t slash = kind.find('/');
  if (slash == std::string_view::npos) {
    return Fail("device", text, "is not a fully qualified name <vendor>/<class>=<name>");
  }
  QualifiedName out{.vendor = std::string(kind.substr(0, slash)),
                    .device_class = std::string(kind.substr(slash + 1)),
                    .name = std::string(text.substr(equals + 1))};
  for (Status s : {ValidateVendor(out.vendor), ValidateClass(out.device_class),
                   ValidateDeviceName(out.name)}) {
    if (!s.ok()) return Status::Error("device \"" + std::string(text) + "\": " + s.message());
  }
  return out;
}

StatusOr<std::vector<QualifiedName>> ParseDeviceRequests(std::string_view value) {
  std::vector<QualifiedName> out;
  while (true) {
    const size_t comma = value.find(',');
    const std::string_view item = Trim(value.substr(0, comma));
    if (!item.empty()) {
      StatusOr<QualifiedName> name = ParseQualifiedName(item);
      if (!name.ok())
        return Status::Error(std::string(kDevicesEnv) + ": " + name.status().message());
      if (std::find(out.begin(), out.end(), *name) == out.end()) out.push_back(std::move(*name));
    }
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace gpuop::agent::cdi::inject
