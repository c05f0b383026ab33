#ifndef GPUOP_AGENT_DEVICEPLUGIN_CONFIG_SOURCE_H_
#define GPUOP_AGENT_DEVICEPLUGIN_CONFIG_SOURCE_H_

#include <filesystem>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "agent/deviceplugin/config.h"

namespace gpuop::agent {

// Where the device plugin's configuration comes from: a directory holding one file per named
// configuration (a ConfigMap mounted as a volume), the name chosen per node by the label
// nvidia.com/device-plugin.config (NVIDIA's convention), falling back to a default name.
//
// Callers watch dir() (common::FileWatch) and reload on change.
//
// Thread-safe.
class ConfigSource {
 public:
  static constexpr char kNodeLabel[] = "nvidia.com/device-plugin.config";

  // `dir` empty: no files, the default configuration. `default_name` is used when the node has
  // no label (or an empty one).
  ConfigSource(std::filesystem::path dir, std::string default_name);

  const std::filesystem::path& dir() const { return dir_; }

  // Selects the configuration named by the node's label value ("" for the default).
  void SetSelected(std::string name);
  std::string selected() const;

  // Reads and parses the selected configuration. A missing directory is the default
  // configuration; a missing selected file is NotFound naming the file and the choices; a
  // malformed one is InvalidArgument from ParseDevicePluginConfig. Callers keep the last good
  // configuration when this fails, so a bad edit never replaces a good one.
  [[nodiscard]] absl::StatusOr<DevicePluginConfig> Load() const;

 private:
  const std::filesystem::path dir_;
  const std::string default_name_;
  mutable absl::Mutex mu_;
  std::string selected_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_DEVICEPLUGIN_CONFIG_SOURCE_H_
