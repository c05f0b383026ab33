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

ConfigSource::~ConfigSource() {
  if (fd_ >= 0) close(fd_);
}

absl::Status ConfigSource::Watch() {
  if (dir_.empty()) return absl::OkStatus();
  fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd_ < 0) return absl::ErrnoToStatus(errno, "config watch: inotify_init1");
  if (inotify_add_watch(
          fd_, dir_.c_str(),
          IN_CREATE | IN_DELETE | IN_MODIFY | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE) < 0) {
    const int err = errno;
    close(fd_);
    fd_ = -1;
    return absl::ErrnoToStatus(err, absl::StrCat("config watch: ", dir_.string()));
  }
  return absl::OkStatus();
}

bool ConfigSource::Changed() {
  if (fd_ < 0) return false;
  bool any = false;
  char buffer[4096];
  while (read(fd_, buffer, sizeof(buffer)) > 0) any = true;
  return any;
}

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
