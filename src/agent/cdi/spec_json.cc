// JSON serialisation of the CDI spec model, both ways.

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "agent/cdi/spec.h"
#include "common/status_macros.h"

namespace gpuop::agent::cdi {
namespace {

using ordered_json = nlohmann::ordered_json;
using json = nlohmann::json;

template <typename T>
void PutIf(ordered_json& out, const char* key, const std::optional<T>& value) {
  if (value.has_value()) out[key] = *value;
}

void PutIf(ordered_json& out, const char* key, const std::string& value) {
  if (!value.empty()) out[key] = value;
}

template <typename T>
void PutIf(ordered_json& out, const char* key, const std::vector<T>& values) {
  if (!values.empty()) out[key] = values;
}

void PutIf(ordered_json& out, const char* key, const std::map<std::string, std::string>& values) {
  if (values.empty()) return;
  ordered_json object = ordered_json::object();
  for (const auto& [name, value] : values) object[name] = value;
  out[key] = std::move(object);
}

ordered_json EditsToJson(const ContainerEdits& edits) {
  ordered_json out = ordered_json::object();
  PutIf(out, "env", edits.env);
  if (!edits.device_nodes.empty()) {
    ordered_json& nodes = out["deviceNodes"] = ordered_json::array();
    for (const DeviceNode& node : edits.device_nodes) {
      ordered_json n = ordered_json::object();
      n["path"] = node.path;
      PutIf(n, "hostPath", node.host_path);
      PutIf(n, "type", node.type);
      PutIf(n, "major", node.major);
      PutIf(n, "minor", node.minor);
      PutIf(n, "fileMode", node.file_mode);
      PutIf(n, "permissions", node.permissions);
      PutIf(n, "uid", node.uid);
      PutIf(n, "gid", node.gid);
      nodes.push_back(std::move(n));
    }
  }
  if (!edits.mounts.empty()) {
    ordered_json& mounts = out["mounts"] = ordered_json::array();
    for (const Mount& mount : edits.mounts) {
      ordered_json m = ordered_json::object();
      m["hostPath"] = mount.host_path;
      m["containerPath"] = mount.container_path;
      PutIf(m, "options", mount.options);
      PutIf(m, "type", mount.type);
      mounts.push_back(std::move(m));
    }
  }
  if (!edits.hooks.empty()) {
    ordered_json& hooks = out["hooks"] = ordered_json::array();
    for (const Hook& hook : edits.hooks) {
      ordered_json h = ordered_json::object();
      h["hookName"] = hook.hook_name;
      h["path"] = hook.path;
      PutIf(h, "args", hook.args);
      PutIf(h, "env", hook.env);
      PutIf(h, "timeout", hook.timeout);
      hooks.push_back(std::move(h));
    }
  }
  PutIf(out, "additionalGids", edits.additional_gids);
  if (!edits.net_devices.empty()) {
    ordered_json& devices = out["netDevices"] = ordered_json::array();
    for (const NetDevice& device : edits.net_devices) {
      devices.push_back({{"hostInterfaceName", device.host_interface_name}, {"name", device.name}});
    }
  }
  return out;
}

// Reads one JSON object strictly: every key must be known, every value of the expected type.
// `path` names the object in error messages ("devices[0].containerEdits").
class ObjectReader {
 public:
  static absl::StatusOr<ObjectReader> Open(const json& value, std::string path,
                                           std::initializer_list<const char*> keys) {
    if (!value.is_object()) return TypeError(path, "an object");
    for (const auto& [key, unused] : value.items()) {
      bool known = false;
      for (const char* k : keys) known = known || key == k;
      if (!known) {
        return absl::InvalidArgumentError(
            absl::StrCat(path.empty() ? "" : path + ".", key, ": unknown field"));
      }
    }
    return ObjectReader(value, std::move(path));
  }

  const json* Find(const char* key) const {
    auto it = object_->find(key);
    return it == object_->end() || it->is_null() ? nullptr : &*it;
  }
  std::string PathOf(const char* key) const { return path_.empty() ? key : path_ + "." + key; }

  absl::Status String(const char* key, std::string& out, bool required = false) const {
    const json* value = Find(key);
    if (value == nullptr) {
      return required ? absl::InvalidArgumentError(PathOf(key) + ": required") : absl::OkStatus();
    }
    if (!value->is_string()) return TypeError(PathOf(key), "a string");
    out = value->get<std::string>();
    return absl::OkStatus();
  }

  absl::Status Strings(const char* key, std::vector<std::string>& out) const {
    const json* value = Find(key);
    if (value == nullptr) return absl::OkStatus();
    if (!value->is_array()) return TypeError(PathOf(key), "an array of strings");
    for (const json& item : *value) {
      if (!item.is_string()) return TypeError(PathOf(key), "an array of strings");
      out.push_back(item.get<std::string>());
    }
    return absl::OkStatus();
  }

  absl::Status StringMap(const char* key, std::map<std::string, std::string>& out) const {
    const json* value = Find(key);
    if (value == nullptr) return absl::OkStatus();
    if (!value->is_object()) return TypeError(PathOf(key), "an object of strings");
    for (const auto& [name, item] : value->items()) {
      if (!item.is_string()) return TypeError(PathOf(key) + "." + name, "a string");
      out[name] = item.get<std::string>();
    }
    return absl::OkStatus();
  }

  template <typename T>
  absl::Status Integer(const char* key, std::optional<T>& out) const {
    const json* value = Find(key);
    if (value == nullptr) return absl::OkStatus();
    if (!value->is_number_integer()) return TypeError(PathOf(key), "an integer");
    if (!FitsIn<T>(*value)) return TypeError(PathOf(key), "an integer in range");
    out = value->get<T>();
    return absl::OkStatus();
  }

  template <typename T>
  static bool FitsIn(const json& value) {
    if (value.is_number_unsigned()) {
      return value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max());
    }
    const int64_t n = value.get<int64_t>();
    return n >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
           (n < 0 ||
            static_cast<uint64_t>(n) <= static_cast<uint64_t>(std::numeric_limits<T>::max()));
  }

  static absl::Status TypeError(const std::string& path, const char* expected) {
    return absl::InvalidArgumentError(
        absl::StrCat(path.empty() ? "spec" : path, ": expected ", expected));
  }

 private:
  ObjectReader(const json& object, std::string path) : object_(&object), path_(std::move(path)) {}
  const json* object_;
  std::string path_;
};

// Calls `read(item, item_path)` for each element of the array at `key`.
template <typename F>
absl::Status ForEach(const ObjectReader& reader, const char* key, F read) {
  const json* value = reader.Find(key);
  if (value == nullptr) return absl::OkStatus();
  if (!value->is_array()) return ObjectReader::TypeError(reader.PathOf(key), "an array");
  for (size_t i = 0; i < value->size(); ++i) {
    GPUOP_RETURN_IF_ERROR(read((*value)[i], absl::StrCat(reader.PathOf(key), "[", i, "]")));
  }
  return absl::OkStatus();
}

absl::StatusOr<ContainerEdits> EditsFromJson(const json& value, const std::string& path) {
  GPUOP_ASSIGN_OR_RETURN(
      const ObjectReader r,
      ObjectReader::Open(
          value, path, {"env", "deviceNodes", "mounts", "hooks", "additionalGids", "netDevices"}));
  ContainerEdits edits;
  GPUOP_RETURN_IF_ERROR(r.Strings("env", edits.env));
  auto read_device_nodes = [&](const json& item, std::string p) -> absl::Status {
    GPUOP_ASSIGN_OR_RETURN(const ObjectReader n,
                           ObjectReader::Open(item, std::move(p),
                                              {"path", "hostPath", "type", "major", "minor",
                                               "fileMode", "permissions", "uid", "gid"}));
    DeviceNode& node = edits.device_nodes.emplace_back();
    GPUOP_RETURN_IF_ERROR(n.String("path", node.path, /*required=*/true));
    GPUOP_RETURN_IF_ERROR(n.String("hostPath", node.host_path));
    GPUOP_RETURN_IF_ERROR(n.String("type", node.type));
    GPUOP_RETURN_IF_ERROR(n.Integer("major", node.major));
    GPUOP_RETURN_IF_ERROR(n.Integer("minor", node.minor));
    GPUOP_RETURN_IF_ERROR(n.Integer("fileMode", node.file_mode));
    GPUOP_RETURN_IF_ERROR(n.String("permissions", node.permissions));
    GPUOP_RETURN_IF_ERROR(n.Integer("uid", node.uid));
    return n.Integer("gid", node.gid);
  };
  GPUOP_RETURN_IF_ERROR(ForEach(r, "deviceNodes", read_device_nodes));
  auto read_mounts = [&](const json& item, std::string p) -> absl::Status {
    GPUOP_ASSIGN_OR_RETURN(
        const ObjectReader m,
        ObjectReader::Open(item, std::move(p), {"hostPath", "containerPath", "options", "type"}));
    Mount& mount = edits.mounts.emplace_back();
    GPUOP_RETURN_IF_ERROR(m.String("hostPath", mount.host_path, /*required=*/true));
    GPUOP_RETURN_IF_ERROR(m.String("containerPath", mount.container_path, /*required=*/true));
    GPUOP_RETURN_IF_ERROR(m.Strings("options", mount.options));
    return m.String("type", mount.type);
  };
  GPUOP_RETURN_IF_ERROR(ForEach(r, "mounts", read_mounts));
  auto read_hooks = [&](const json& item, std::string p) -> absl::Status {
    GPUOP_ASSIGN_OR_RETURN(
        const ObjectReader h,
        ObjectReader::Open(item, std::move(p), {"hookName", "path", "args", "env", "timeout"}));
    Hook& hook = edits.hooks.emplace_back();
    GPUOP_RETURN_IF_ERROR(h.String("hookName", hook.hook_name, /*required=*/true));
    GPUOP_RETURN_IF_ERROR(h.String("path", hook.path, /*required=*/true));
    GPUOP_RETURN_IF_ERROR(h.Strings("args", hook.args));
    GPUOP_RETURN_IF_ERROR(h.Strings("env", hook.env));
    return h.Integer("timeout", hook.timeout);
  };
  GPUOP_RETURN_IF_ERROR(ForEach(r, "hooks", read_hooks));
  auto read_additional_gids = [&](const json& item, std::string p) -> absl::Status {
    if (!item.is_number_integer() || !ObjectReader::FitsIn<uint32_t>(item)) {
      return ObjectReader::TypeError(p, "an unsigned 32-bit integer");
    }
    edits.additional_gids.push_back(item.get<uint32_t>());
    return absl::OkStatus();
  };
  GPUOP_RETURN_IF_ERROR(ForEach(r, "additionalGids", read_additional_gids));
  auto read_net_devices = [&](const json& item, std::string p) -> absl::Status {
    GPUOP_ASSIGN_OR_RETURN(const ObjectReader d,
                           ObjectReader::Open(item, std::move(p), {"hostInterfaceName", "name"}));
    NetDevice& device = edits.net_devices.emplace_back();
    GPUOP_RETURN_IF_ERROR(d.String("hostInterfaceName", device.host_interface_name, true));
    return d.String("name", device.name, /*required=*/true);
  };
  GPUOP_RETURN_IF_ERROR(ForEach(r, "netDevices", read_net_devices));
  return edits;
}

}  // namespace

ordered_json SpecToJson(const Spec& spec) {
  ordered_json out = ordered_json::object();
  out["cdiVersion"] = spec.cdi_version;
  out["kind"] = spec.kind;
  PutIf(out, "annotations", spec.annotations);
  ordered_json& devices = out["devices"] = ordered_json::array();
  for (const Device& device : spec.devices) {
    ordered_json d = ordered_json::object();
    d["name"] = device.name;
    PutIf(d, "annotations", device.annotations);
    d["containerEdits"] = EditsToJson(device.container_edits);
    devices.push_back(std::move(d));
  }
  if (!spec.container_edits.empty()) out["containerEdits"] = EditsToJson(spec.container_edits);
  return out;
}

std::string SpecToJsonText(const Spec& spec) { return SpecToJson(spec).dump(2) + "\n"; }

absl::StatusOr<Spec> SpecFromJson(absl::string_view text) {
  const json document = json::parse(text.begin(), text.end(), /*cb=*/nullptr,
                                    /*allow_exceptions=*/false);
  if (document.is_discarded()) return absl::InvalidArgumentError("CDI spec: not valid JSON");
  GPUOP_ASSIGN_OR_RETURN(
      const ObjectReader r,
      ObjectReader::Open(document, "",
                         {"cdiVersion", "kind", "annotations", "devices", "containerEdits"}));
  Spec spec;
  GPUOP_RETURN_IF_ERROR(r.String("cdiVersion", spec.cdi_version, /*required=*/true));
  GPUOP_RETURN_IF_ERROR(r.String("kind", spec.kind, /*required=*/true));
  GPUOP_RETURN_IF_ERROR(r.StringMap("annotations", spec.annotations));
  auto read_devices = [&](const json& item, std::string p) -> absl::Status {
    GPUOP_ASSIGN_OR_RETURN(const ObjectReader d,
                           ObjectReader::Open(item, p, {"name", "annotations", "containerEdits"}));
    Device& device = spec.devices.emplace_back();
    GPUOP_RETURN_IF_ERROR(d.String("name", device.name, /*required=*/true));
    GPUOP_RETURN_IF_ERROR(d.StringMap("annotations", device.annotations));
    if (const json* edits = d.Find("containerEdits")) {
      GPUOP_ASSIGN_OR_RETURN(device.container_edits,
                             EditsFromJson(*edits, d.PathOf("containerEdits")));
    }
    return absl::OkStatus();
  };
  GPUOP_RETURN_IF_ERROR(ForEach(r, "devices", read_devices));
  if (const json* edits = r.Find("containerEdits")) {
    GPUOP_ASSIGN_OR_RETURN(spec.container_edits, EditsFromJson(*edits, "containerEdits"));
  }
  return spec;
}

}  // namespace gpuop::agent::cdi
