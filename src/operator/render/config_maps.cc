#include "operator/render/config_maps.h"

#include <span>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

namespace {

// NVIDIA's default MIG layouts (the GPU operator's default-mig-parted-config), as facts: the
// board families by PCI device id (device << 16 | vendor) and each layout's profile counts.
constexpr const char* k80GbBoards[] = {"0x233010DE", "0x233110DE", "0x232210DE", "0x20B210DE",
                                       "0x20B510DE", "0x20F310DE", "0x20F510DE"};
constexpr const char* k40GbBoards[] = {"0x20B010DE", "0x20B110DE", "0x20F110DE", "0x20F610DE"};
constexpr const char* kNvlBoards[] = {"0x232110DE", "0x233A10DE"};
constexpr const char* k96GbBoards[] = {"0x233D10DE", "0x20B610DE"};
constexpr const char* kA30Boards[] = {"0x20B710DE"};

using Profiles = std::vector<std::pair<std::string, int>>;

void AppendEntry(std::string& yaml, std::span<const char* const> boards, const Profiles& profiles) {
  yaml += "  - ";
  if (!boards.empty()) {
    absl::StrAppend(&yaml, "device-filter: [",
                    absl::StrJoin(boards, ", ",
                                  [](std::string* out, const char* id) {
                                    absl::StrAppend(out, "\"", id, "\"");
                                  }),
                    "]\n    ");
  }
  yaml += "devices: all\n    mig-enabled: true\n    mig-devices:";
  if (profiles.empty()) yaml += " {}";
  yaml += "\n";
  for (const auto& [profile, count] : profiles) {
    absl::StrAppend(&yaml, "      \"", profile, "\": ", count, "\n");
  }
}

// "all-1g.5gb.me" for 1g.5gb+me: one profile on every MIG-capable GPU.
void AppendSingle(std::string& yaml, const std::string& profile, int count) {
  std::string name = profile;
  if (absl::EndsWith(name, "+me")) name = absl::StrCat(name.substr(0, name.size() - 3), ".me");
  absl::StrAppend(&yaml, "  all-", name, ":\n");
  AppendEntry(yaml, {}, {{profile, count}});
}

}  // namespace

std::string DefaultMigLayouts() {
  std::string yaml =
      "version: v1\n"
      "mig-configs:\n"
      "  all-disabled:\n"
      "  - devices: all\n"
      "    mig-enabled: false\n"
      "  all-enabled:\n";
  AppendEntry(yaml, {}, {});
  const Profiles singles = {
      // A100-40GB
      {"1g.5gb", 7},
      {"1g.5gb+me", 1},
      {"2g.10gb", 3},
      {"3g.20gb", 2},
      {"4g.20gb", 1},
      {"7g.40gb", 1},
      // 80 GB boards (H100, H800, A100, A800); all-1g.10gb follows with a split per size
      {"1g.10gb+me", 1},
      {"1g.20gb", 4},
      {"2g.20gb", 3},
      {"3g.40gb", 2},
      {"4g.40gb", 1},
      {"7g.80gb", 1},
      // A30
      {"1g.6gb", 4},
      {"1g.6gb+me", 1},
      {"2g.12gb", 2},
      {"2g.12gb+me", 1},
      {"4g.24gb", 1},
      // H100 NVL, H800 NVL
      {"1g.12gb", 7},
      {"1g.12gb+me", 1},
      {"2g.24gb", 3},
      {"3g.47gb", 2},
      {"4g.47gb", 1},
      {"7g.94gb", 1},
      // 96 GB boards (H100-96GB, PG506)
      {"3g.48gb", 2},
      {"4g.48gb", 1},
      {"7g.96gb", 1}};
  for (const auto& [profile, count] : singles) AppendSingle(yaml, profile, count);
  yaml += "  all-1g.10gb:\n";
  AppendEntry(yaml, k80GbBoards, {{"1g.10gb", 7}});
  AppendEntry(yaml, k40GbBoards, {{"1g.10gb", 4}});
  yaml += "  all-balanced:\n";
  AppendEntry(yaml, kNvlBoards, {{"1g.12gb", 1}, {"2g.24gb", 1}, {"3g.47gb", 1}});
  AppendEntry(yaml, k80GbBoards, {{"1g.10gb", 2}, {"2g.20gb", 1}, {"3g.40gb", 1}});
  AppendEntry(yaml, k40GbBoards, {{"1g.5gb", 2}, {"2g.10gb", 1}, {"3g.20gb", 1}});
  AppendEntry(yaml, kA30Boards, {{"1g.6gb", 2}, {"2g.12gb", 1}});
  AppendEntry(yaml, k96GbBoards, {{"1g.12gb", 2}, {"2g.24gb", 1}, {"3g.48gb", 1}});
  return yaml;
}

nlohmann::json MigConfigMap(const std::string& ns) {
  return ConfigMap("gpuop-mig-config", ns, "mig-manager", {{"config.yaml", DefaultMigLayouts()}});
}

}  // namespace gpuop::op::render
