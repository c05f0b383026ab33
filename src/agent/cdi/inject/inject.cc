#include "agent/cdi/inject/inject.h"

#include "agent/cdi/inject/files.h"

namespace gpuop::agent::cdi::inject {

using nlohmann::ordered_json;

StatusOr<std::optional<std::vector<QualifiedName>>> RequestedDevices(const ordered_json& config) {
  const std::string prefix = std::string(kDevicesEnv) + "=";
  const auto process = config.find("process");
  if (process == config.end() || !process->is_object()) {
    return std::optional<std::vector<QualifiedName>>();
  }
  const auto env = process->find("env");
  if (env == process->end() || env->is_null()) return std::optional<std::vector<QualifiedName>>();
  if (!env->is_array()) return Status::Error("config.json: process.env is not an array");
  std::optional<std::string> value;
  for (const ordered_json& entry : *env) {
    if (!entry.is_string()) continue;  // ApplyEdits reports it if it must read it
    const std::string& text = entry.get_ref<const std::string&>();
    if (text.starts_with(prefix)) value = text.substr(prefix.size());
  }
  if (!value) return std::optional<std::vector<QualifiedName>>();
  StatusOr<std::vector<QualifiedName>> names = ParseDeviceRequests(*value);
  if (!names.ok()) return names.status();
  return std::optional<std::vector<QualifiedName>>(std::move(*names));
}

StatusOr<InjectResult> InjectIntoBundle(const std::string& bundle, const InjectOptions& options) {
  const std::string path = (bundle.ends_with('/') ? bundle : bundle + "/") + "config.json";
  StatusOr<std::string> text = ReadFileLimited(path);
  if (!text.ok()) return text.status();
  ordered_json config =
      ordered_json::parse(text->begin(), text->end(), nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded()) return Status::Error(path + " is not valid JSON");
  if (!config.is_object()) return Status::Error(path + " is not a JSON object");

  StatusOr<std::optional<std::vector<QualifiedName>>> requests = RequestedDevices(config);
  if (!requests.ok()) return Status::Error(path + ": " + requests.status().message());
  if (!requests->has_value()) return InjectResult::kNotRequested;
  if ((*requests)->empty()) return InjectResult::kUnchanged;

  StatusOr<std::vector<ResolvedDevice>> devices = ResolveDevices(options.spec_dirs, **requests);
  if (!devices.ok()) return devices.status();
  const ordered_json original = config;
  if (Status s = ApplyEdits(config, CollectEdits(*devices), options.stat_device); !s.ok()) {
    return s;
  }
  if (config == original) return InjectResult::kUnchanged;
  // Strings came from a parsed document or a parsed spec, so they are valid UTF-8; replacing
  // invalid sequences only keeps dump() from ever throwing.
  const std::string out = config.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
  if (Status s = ReplaceFileAtomically(path, out); !s.ok()) return s;
  return InjectResult::kRewritten;
}

}  // namespace gpuop::agent::cdi::inject
