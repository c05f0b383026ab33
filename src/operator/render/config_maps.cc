#include "operator/render/config_maps.h"

#include "absl/strings/str_cat.h"
#include "operator/nodes/node_labels.h"
#include "operator/render/render.h"

namespace gpuop::op::render {

namespace {

nlohmann::json ConfigMap(const std::string& name, const std::string& ns, const char* component,
                         nlohmann::json data) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata",
           {{"name", name},
            {"namespace", ns},
            {"labels",
             {{kManagedByLabel, kManagedByValue},
              {kComponentLabel, component},
              {"app.kubernetes.io/part-of", "gpuop"},
              {"app.kubernetes.io/name", name}}}}},
          {"data", std::move(data)}};
}

}  // namespace

nlohmann::json DevicePluginConfigMap(const PolicySpec& policy, const std::vector<NodePool>& pools,
                                     const std::string& ns) {
  const std::string flags =
      absl::StrCat("version: v1\nflags:\n  migStrategy: ", policy.components.mig_strategy, "\n");
  nlohmann::json data = {{policy.components.device_plugin_default_config, flags}};
  for (const auto& pool : pools) {
    if (!pool.time_slicing_replicas.has_value() || pool.device_plugin_config.has_value()) continue;
    data[TimeSlicingConfigName(pool.name)] = absl::StrCat(
        flags, "sharing:\n  timeSlicing:\n",
        pool.time_slicing_rename ? "    renameByDefault: true\n" : "",
        "    resources:\n    - name: nvidia.com/gpu\n      replicas: ", *pool.time_slicing_replicas,
        "\n");
  }
  return ConfigMap("gpuop-device-plugin-config", ns, "device-plugin", std::move(data));
}

nlohmann::json MigConfigMap(const std::string& ns) {
  std::string yaml =
      "version: v1\n"
      "mig-configs:\n"
      "  all-disabled:\n"
      "  - devices: all\n"
      "    mig-enabled: false\n"
      "  all-enabled:\n"
      "  - devices: all\n"
      "    mig-enabled: true\n"
      "    mig-devices: {}\n";
  for (const auto& [profile, count] : std::vector<std::pair<std::string, int>>{
           {"1g.10gb", 7}, {"2g.20gb", 3}, {"3g.40gb", 2}, {"7g.80gb", 1}}) {
    absl::StrAppend(&yaml, "  all-", profile, ":\n  - devices: all\n    mig-enabled: true\n",
                    "    mig-devices:\n      \"", profile, "\": ", count, "\n");
  }
  absl::StrAppend(&yaml,
                  "  all-balanced:\n  - devices: all\n    mig-enabled: true\n    mig-devices:\n"
                  "      \"1g.10gb\": 2\n      \"2g.20gb\": 1\n      \"3g.40gb\": 1\n");
  return ConfigMap("gpuop-mig-config", ns, "mig-manager", {{"config.yaml", yaml}});
}

}  // namespace gpuop::op::render
