#include "agent/deviceplugin/config_source.h"

#include <cerrno>

#include <sys/inotify.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/files.h"

namespace gpuop::agent {

ConfigSource::ConfigSource(std::filesystem::path dir, std::string default_name)
    : dir_(std::move(dir)), default_name_(std::move(default_name)) {}

void ConfigSource::SetSelected(std::string name) {
  absl::MutexLock lock(&mu_);
  selected_ = std::move(name);
}

std::string ConfigSource::selected() const {
  absl::MutexLock lock(&mu_);
  return selected_.empty() ? default_name_ : selected_;
}

absl::StatusOr<DevicePluginConfig> ConfigSource::Load() const {
  if (dir_.empty() || !std::filesystem::is_directory(dir_)) return DevicePluginConfig{};
  const std::string name = selected();
  const std::filesystem::path file = dir_ / name;
  absl::StatusOr<std::optional<std::string>> text = common::ReadFileIfExists(file);
  if (!text.ok()) return text.status();
  if (!text->has_value()) {
    if (name == default_name_) return DevicePluginConfig{};  // No default file: defaults.
    std::vector<std::string> choices;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      const std::string n = entry.path().filename().string();
      if (!n.empty() && n[0] != '.') choices.push_back(n);
    }
    std::sort(choices.begin(), choices.end());
    return absl::NotFoundError(absl::StrCat("device plugin config \"", name, "\" (", kNodeLabel,
                                            "): no file ", file.string(),
                                            "; available: ", absl::StrJoin(choices, ", ")));
  }
  return ParseDevicePluginConfig(**text, file.string());
}

}  // namespace gpuop::agent
