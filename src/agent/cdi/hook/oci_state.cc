#include "agent/cdi/hook/oci_state.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/cdi/hook/root_dir.h"

namespace gpuop::agent::cdi::hook {
namespace {

using nlohmann::json;

// The JSON document in `text`, or an error naming `what`. Never throws: parse errors come back
// as a discarded value.
StatusOr<json> ParseObject(std::string_view text, const std::string& what) {
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Status::Error(what + " is not valid JSON");
  if (!doc.is_object()) return Status::Error(what + " is not a JSON object");
  return doc;
}

StatusOr<std::string> StringField(const json& object, const char* key, const std::string& what) {
  const auto it = object.find(key);
  if (it == object.end()) return Status::Error(what + " has no \"" + key + "\"");
  if (!it->is_string()) return Status::Error(what + ": \"" + key + "\" is not a string");
  return it->get<std::string>();
}

}  // namespace

StatusOr<ContainerState> ParseContainerState(std::string_view state_json,
                                             const ReadFileFn& read_file) {
  StatusOr<json> state = ParseObject(state_json, "the OCI state on standard input");
  if (!state.ok()) return state.status();
  ContainerState out;
  if (const auto id = state->find("id"); id != state->end() && id->is_string()) {
    out.id = id->get<std::string>();
  }
  StatusOr<std::string> bundle = StringField(*state, "bundle", "the OCI state");
  if (!bundle.ok()) return bundle.status();
  if (bundle->empty() || bundle->front() != '/') {
    return Status::Error("the OCI state's bundle \"" + *bundle + "\" is not an absolute path");
  }
  out.bundle = std::filesystem::path(*bundle).lexically_normal().string();

  const std::string config_path = (std::filesystem::path(out.bundle) / "config.json").string();
  StatusOr<std::optional<std::string>> text = read_file(config_path, kMaxConfigSize);
  if (!text.ok()) return text.status();
  if (!text->has_value()) return Status::Error("the bundle has no config.json: " + config_path);
  StatusOr<json> config = ParseObject(**text, config_path);
  if (!config.ok()) return config.status();
  const auto root = config->find("root");
  if (root == config->end() || !root->is_object()) {
    return Status::Error(config_path + " has no \"root\" object");
  }
  StatusOr<std::string> root_path = StringField(*root, "path", config_path + ": root");
  if (!root_path.ok()) return root_path.status();
  if (root_path->empty()) return Status::Error(config_path + ": root.path is empty");
  std::filesystem::path joined(*root_path);
  if (joined.is_relative()) joined = std::filesystem::path(out.bundle) / joined;
  joined = joined.lexically_normal();
  std::string normal = joined.string();
  while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  if (normal == "/") {
    return Status::Error(config_path + ": root.path is the host's root; refusing to change it");
  }
  out.root = std::move(normal);
  return out;
}

StatusOr<std::optional<std::string>> ReadHostFile(const std::string& path, size_t max_size) {
  const std::filesystem::path file(path);
  StatusOr<RootDir> dir = RootDir::Open(file.parent_path().string());
  if (!dir.ok()) {
    if (dir.status().error_number() == ENOENT) return std::optional<std::string>();
    return dir.status();
  }
  // The bundle is the runtime's, not the image's; reading it through RootDir only adds the
  // O_NOFOLLOW and size checks.
  std::string name = "/";
  name += file.filename().string();
  return dir->ReadFile(name, max_size);
}

}  // namespace gpuop::agent::cdi::hook
