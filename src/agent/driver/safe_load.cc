#include "agent/driver/safe_load.h"

#include <cstdio>

#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/mountinfo.h"
#include "kube/client/resource.h"

namespace gpuop::agent {
namespace {

constexpr char kFieldManager[] = "gpuop-driver";

bool Exists(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0;
}

// The annotation's value on the Node; "" when absent.
absl::StatusOr<std::string> Annotation(kube::Client& client, const std::string& node) {
  absl::StatusOr<kube::Json> object =
      client.Get(kube::resources::kNodes, "", node, {.metadata_only = true});
  if (!object.ok()) return object.status();
  const kube::Json& annotations =
      object->value("metadata", kube::Json::object()).value("annotations", kube::Json::object());
  auto it = annotations.find(kSafeLoadAnnotation);
  return it != annotations.end() && it->is_string() ? it->get<std::string>() : std::string();
}

absl::Status SetAnnotation(kube::Client& client, const std::string& node, const kube::Json& value) {
  const kube::Json patch = {{"metadata", {{"annotations", {{kSafeLoadAnnotation, value}}}}}};
  return client
      .Patch(kube::resources::kNodes, "", node, kube::PatchType::kMergePatch, patch,
             {.field_manager = kFieldManager})
      .status();
}

}  // namespace

std::optional<std::string> LoadedDriver(const LoadedDriverPaths& paths) {
  if (Exists(paths.module_dir)) {
    return absl::StrCat("the NVIDIA kernel module is loaded (", paths.module_dir, " exists)");
  }
  const std::optional<bool> mounted = common::MountedOn(paths.mountinfo, paths.driver_root);
  if (!mounted.has_value()) {
    return absl::StrCat(paths.mountinfo, " cannot be read, so a driver may be loaded at ",
                        paths.driver_root);
  }
  if (*mounted) {
    return absl::StrCat("a driver root is mounted at ", paths.driver_root,
                        " (an earlier driver container has not unloaded)");
  }
  if (Exists(absl::StrCat(paths.driver_root, "/usr/bin/nvidia-smi"))) {
    return absl::StrCat("a driver's files are published at ", paths.driver_root,
                        " (an earlier driver container has not unloaded)");
  }
  return std::nullopt;
}

absl::Status WaitForSafeLoad(kube::Client& client, const SafeLoadOptions& options,
                             std::stop_token stop) {
  if (options.node_name.empty() || options.pod_name.empty()) {
    return absl::InvalidArgumentError("safe load: the node name and the pod name are required");
  }
  const std::optional<std::string> loaded = LoadedDriver(options.paths);
  // Each step repeats until the API server answers.
  auto retry = [&](const char* what, auto step) -> absl::Status {
    while (true) {
      absl::Status status = step();
      if (status.ok() || stop.stop_requested()) return status;
      std::fprintf(stderr, "safe load: %s: %s; retrying\n", what, status.ToString().c_str());
      if (!common::Clock::Real().SleepFor(options.poll, stop))
        return absl::CancelledError("safe load: stopped");
    }
  };
  if (!loaded.has_value()) {
    std::printf("safe load: no driver is loaded on node %s: loading at once\n",
                options.node_name.c_str());
    // A request an earlier pod left must not make the operator drain the node for nothing.
    return retry("clear the request of an earlier pod", [&]() -> absl::Status {
      absl::StatusOr<std::string> now = Annotation(client, options.node_name);
      if (!now.ok()) return now.status();
      return now->empty() ? absl::OkStatus() : SetAnnotation(client, options.node_name, nullptr);
    });
  }
  std::printf("safe load: %s; asking the operator to make node %s safe (%s=%s)\n", loaded->c_str(),
              options.node_name.c_str(), kSafeLoadAnnotation, options.pod_name.c_str());
  std::fflush(stdout);
  if (absl::Status set =
          retry("request the safe load",
                [&] { return SetAnnotation(client, options.node_name, options.pod_name); });
      !set.ok()) {
    return set;
  }
  while (true) {
    absl::StatusOr<std::string> now = Annotation(client, options.node_name);
    if (now.ok() && *now != options.pod_name) {
      std::printf("safe load: node %s is ready for the driver: loading\n",
                  options.node_name.c_str());
      return absl::OkStatus();
    }
    if (!now.ok()) {
      std::fprintf(stderr, "safe load: read node %s: %s; retrying\n", options.node_name.c_str(),
                   now.status().ToString().c_str());
    }
    if (!common::Clock::Real().SleepFor(options.poll, stop))
      return absl::CancelledError("safe load: stopped");
  }
}

}  // namespace gpuop::agent
