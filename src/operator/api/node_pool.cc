#include "operator/api/node_pool.h"

#include "common/status_macros.h"
#include "operator/api/reader.h"

namespace gpuop::op {

namespace {

// Sets `out` when the field is present.
template <typename T, typename ReadFn>
absl::Status Optional(const Reader& r, const char* key, std::optional<T>& out, ReadFn read) {
  if (r.Get(key).is_null()) return absl::OkStatus();
  T value{};
  GPUOP_RETURN_IF_ERROR(read(key, value));
  out = std::move(value);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<NodePool> ParseNodePool(const nlohmann::json& object) {
  NodePool p;
  const Reader root(object, "");
  GPUOP_RETURN_IF_ERROR(root.Child("metadata").String("name", p.name));
  GPUOP_RETURN_IF_ERROR(root.Child("metadata").Int("generation", p.generation, 0, INT64_MAX));
  const Reader spec = root.Child("spec");
  if (spec.Get("nodeSelector").is_null()) {
    return spec.Error("nodeSelector", "is required");
  }
  GPUOP_ASSIGN_OR_RETURN(p.node_selector, kube::LabelSelector::FromJson(spec.Get("nodeSelector"),
                                                                        spec.Path("nodeSelector")));
  if (p.node_selector.Empty()) {
    return spec.Error("nodeSelector",
                      "must select something: an empty selector would put every GPU node in the "
                      "pool");
  }
  auto str = [](const Reader& r) {
    return [r](const char* key, std::string& out) { return r.String(key, out); };
  };
  const Reader driver = spec.Child("driver");
  GPUOP_RETURN_IF_ERROR(Optional(driver, "version", p.driver_version, str(driver)));
  GPUOP_RETURN_IF_ERROR(Optional(driver, "repository", p.driver_repository, str(driver)));
  GPUOP_RETURN_IF_ERROR(Optional(spec, "migLayout", p.mig_layout, str(spec)));
  GPUOP_RETURN_IF_ERROR(Optional(spec, "devicePluginConfig", p.device_plugin_config, str(spec)));
  const Reader slicing = spec.Child("timeSlicing");
  GPUOP_RETURN_IF_ERROR(
      Optional(slicing, "replicas", p.time_slicing_replicas,
               [&](const char* key, int64_t& out) { return slicing.Int(key, out, 2, 64); }));
  GPUOP_RETURN_IF_ERROR(slicing.Bool("renameByDefault", p.time_slicing_rename));
  if (!spec.Get("power").is_null()) {
    const Reader power = spec.Child("power");
    NodePool::Power settings;
    GPUOP_RETURN_IF_ERROR(
        Optional(power, "enabled", settings.enabled,
                 [&](const char* key, bool& out) { return power.Bool(key, out); }));
    GPUOP_RETURN_IF_ERROR(
        Optional(power, "idleAfter", settings.idle_after,
                 [&](const char* key, absl::Duration& out) { return power.Duration(key, out); }));
    GPUOP_RETURN_IF_ERROR(
        Optional(power, "floorPercent", settings.floor_percent,
                 [&](const char* key, int64_t& out) { return power.Int(key, out, 1, 100); }));
    p.power = settings;
  }
  return p;
}

}  // namespace gpuop::op
