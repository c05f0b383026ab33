#include "agent/cdi/inject/cdi_spec.h"

#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "agent/cdi/inject/device_names.h"

namespace gpuop::agent::cdi::inject {
namespace {

using nlohmann::json;

bool IsKnownHookName(std::string_view name) {
  return name == "prestart" || name == "createRuntime" || name == "createContainer" ||
         name == "startContainer" || name == "poststart" || name == "poststop";
}

bool IsEnvEntry(std::string_view entry) {
  const size_t equals = entry.find('=');
  return equals != std::string_view::npos && equals > 0;
}

// Reads one spec's fields; every error names the file and the field's path in the document.
class SpecReader {
 public:
  explicit SpecReader(const std::string& file) : file_(file) {}

  Status Fail(const std::string& field, const std::string& problem) const {
    return Status::Error(file_ + ": " + field + ": " + problem);
  }

  // The member `key` of `object`; nullptr when absent or null (Go reads null as absent).
  static const json* Find(const json& object, const char* key) {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return nullptr;
    return &*it;
  }

  static std::string Join(const std::string& where, const char* key) {
    return where.empty() ? std::string(key) : where + "." + key;
  }

  Status String(const json& object, const char* key, const std::string& where, bool required,
                std::string& out) const {
    const json* value = Find(object, key);
    if (value == nullptr) return required ? Fail(Join(where, key), "missing") : Status::Ok();
    if (!value->is_string()) return Fail(Join(where, key), "not a string");
    out = value->get<std::string>();
    return Status::Ok();
  }

  Status StringList(const json& object, const char* key, const std::string& where,
                    std::vector<std::string>& out) const {
    const json* value = Find(object, key);
    if (value == nullptr) return Status::Ok();
    const std::string field = Join(where, key);
    if (!value->is_array()) return Fail(field, "not an array");
    for (size_t i = 0; i < value->size(); ++i) {
      const json& item = (*value)[i];
      if (!item.is_string()) return Fail(field + "[" + std::to_string(i) + "]", "not a string");
      out.push_back(item.get<std::string>());
    }
    return Status::Ok();
  }

  // An integer in [min, max]; floating-point numbers ("1.0") are rejected like Go rejects them.
  StatusOr<int64_t> Integer(const json& value, const std::string& field, int64_t min,
                            int64_t max) const {
    const std::string range =
        "; expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
    if (!value.is_number_integer()) return Fail(field, "not an integer" + range);
    if (value.is_number_unsigned()) {
      const uint64_t number = value.get<uint64_t>();
      if (number > static_cast<uint64_t>(max) || static_cast<int64_t>(number) < min) {
        return Fail(field, "out of range" + range);
      }
      return static_cast<int64_t>(number);
    }
    const int64_t number = value.get<int64_t>();
    if (number < min || number > max) return Fail(field, "out of range" + range);
    return number;
  }

  template <typename T>
  Status OptionalInteger(const json& object, const char* key, const std::string& where, int64_t min,
                         std::optional<T>& out) const {
    const json* value = Find(object, key);
    if (value == nullptr) return Status::Ok();
    const int64_t max = static_cast<int64_t>(std::numeric_limits<T>::max());
    StatusOr<int64_t> number = Integer(*value, Join(where, key), min, max);
    if (!number.ok()) return number.status();
    out = static_cast<T>(*number);
    return Status::Ok();
  }

  Status Env(const json& object, const char* key, const std::string& where,
             std::vector<std::string>& out) const {
    if (Status s = StringList(object, key, where, out); !s.ok()) return s;
    for (size_t i = 0; i < out.size(); ++i) {
      if (!IsEnvEntry(out[i])) {
        return Fail(Join(where, key) + "[" + std::to_string(i) + "]",
                    "\"" + out[i] + "\" is not NAME=value");
      }
    }
    return Status::Ok();
  }

  Status Node(const json& value, const std::string& where, DeviceNode& out) const {
    if (!value.is_object()) return Fail(where, "not an object");
    for (Status s : {String(value, "path", where, true, out.path),
                     String(value, "hostPath", where, false, out.host_path),
                     String(value, "type", where, false, out.type),
                     String(value, "permissions", where, false, out.permissions),
                     OptionalInteger(value, "major", where, 0, out.major),
                     OptionalInteger(value, "minor", where, 0, out.minor),
                     OptionalInteger(value, "fileMode", where, 0, out.file_mode),
                     OptionalInteger(value, "uid", where, 0, out.uid),
                     OptionalInteger(value, "gid", where, 0, out.gid)}) {
      if (!s.ok()) return s;
    }
    if (out.path.empty() || out.path.front() != '/') {
      return Fail(Join(where, "path"), "\"" + out.path + "\" is not absolute");
    }
    if (!out.type.empty() && out.type != "b" && out.type != "c" && out.type != "u" &&
        out.type != "p") {
      return Fail(Join(where, "type"), "\"" + out.type + "\"; expected b, c, u or p");
    }
    if (out.permissions.find_first_not_of("rwm") != std::string::npos) {
      return Fail(Join(where, "permissions"),
                  "\"" + out.permissions + "\"; expected a subset of rwm");
    }
    return Status::Ok();
  }

  Status MountEntry(const json& value, const std::string& where, Mount& out) const {
    if (!value.is_object()) return Fail(where, "not an object");
    for (Status s : {String(value, "hostPath", where, true, out.host_path),
                     String(value, "containerPath", where, true, out.container_path),
                     String(value, "type", where, false, out.type),
                     StringList(value, "options", where, out.options)}) {
      if (!s.ok()) return s;
    }
    if (out.host_path.empty()) return Fail(Join(where, "hostPath"), "empty");
    if (out.container_path.empty() || out.container_path.front() != '/') {
      return Fail(Join(where, "containerPath"), "\"" + out.container_path + "\" is not absolute");
    }
    return Status::Ok();
  }

  Status HookEntry(const json& value, const std::string& where, Hook& out) const {
    if (!value.is_object()) return Fail(where, "not an object");
    for (Status s : {String(value, "hookName", where, true, out.hook_name),
                     String(value, "path", where, true, out.path),
                     StringList(value, "args", where, out.args), Env(value, "env", where, out.env),
                     OptionalInteger(value, "timeout", where, 1, out.timeout)}) {
      if (!s.ok()) return s;
    }
    if (!IsKnownHookName(out.hook_name)) {
      return Fail(Join(where, "hookName"),
                  "\"" + out.hook_name +
                      "\"; expected prestart, createRuntime, createContainer, startContainer, "
                      "poststart or poststop");
    }
    if (out.path.empty() || out.path.front() != '/') {
      return Fail(Join(where, "path"), "\"" + out.path + "\" is not absolute");
    }
    if (out.timeout && *out.timeout > std::numeric_limits<int32_t>::max()) {
      return Fail(Join(where, "timeout"), "out of range");
    }
    return Status::Ok();
  }

  // An array member whose entries `parse_entry` reads.
  template <typename T, typename Fn>
  Status Array(const json& object, const char* key, const std::string& where, std::vector<T>& out,
               Fn parse_entry) const {
    const json* value = Find(object, key);
    if (value == nullptr) return Status::Ok();
    const std::string field = Join(where, key);
    if (!value->is_array()) return Fail(field, "not an array");
    for (size_t i = 0; i < value->size(); ++i) {
      T entry{};
      if (Status s = parse_entry((*value)[i], field + "[" + std::to_string(i) + "]", entry);
          !s.ok()) {
        return s;
      }
      out.push_back(std::move(entry));
    }
    return Status::Ok();
  }

  Status Edits(const json& object, const std::string& where, ContainerEdits& out) const {
    const json* edits = Find(object, "containerEdits");
    if (edits == nullptr) return Status::Ok();
    const std::string field = Join(where, "containerEdits");
    if (!edits->is_object()) return Fail(field, "not an object");
    if (Status s = Env(*edits, "env", field, out.env); !s.ok()) return s;
    Status s =
        Array(*edits, "deviceNodes", field, out.device_nodes,
              [this](const json& v, const std::string& w, DeviceNode& n) { return Node(v, w, n); });
    if (!s.ok()) return s;
    s = Array(
        *edits, "mounts", field, out.mounts,
        [this](const json& v, const std::string& w, Mount& m) { return MountEntry(v, w, m); });
    if (!s.ok()) return s;
    s = Array(*edits, "hooks", field, out.hooks,
              [this](const json& v, const std::string& w, Hook& h) { return HookEntry(v, w, h); });
    if (!s.ok()) return s;
    s = Array(*edits, "additionalGids", field, out.additional_gids,
              [this](const json& v, const std::string& w, uint32_t& gid) {
                StatusOr<int64_t> number = Integer(v, w, 0, std::numeric_limits<uint32_t>::max());
                if (!number.ok()) return number.status();
                gid = static_cast<uint32_t>(*number);
                return Status::Ok();
              });
    if (!s.ok()) return s;
    for (const char* key : {"intelRdt", "netDevices"}) {
      if (Find(*edits, key) != nullptr) out.unsupported.push_back(Join(field, key));
    }
    return Status::Ok();
  }

 private:
  const std::string& file_;
};

}  // namespace

const Device* Spec::FindDevice(std::string_view name) const {
  for (const Device& device : devices) {
    if (device.name == name) return &device;
  }
  return nullptr;
}

StatusOr<Spec> ParseSpecJson(std::string_view text, const std::string& file) {
  const json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Status::Error(file + ": not valid JSON");
  if (!doc.is_object()) return Status::Error(file + ": not a JSON object");
  const SpecReader reader(file);
  Spec spec;
  spec.file = file;
  if (Status s = reader.String(doc, "cdiVersion", "", true, spec.cdi_version); !s.ok()) return s;
  if (spec.cdi_version.empty()) return reader.Fail("cdiVersion", "empty");
  if (Status s = reader.String(doc, "kind", "", true, spec.kind); !s.ok()) return s;
  if (Status s = ValidateKind(spec.kind); !s.ok()) return reader.Fail("kind", s.message());
  if (Status s = reader.Edits(doc, "", spec.edits); !s.ok()) return s;

  const json* devices = SpecReader::Find(doc, "devices");
  if (devices == nullptr) return reader.Fail("devices", "missing");
  if (!devices->is_array()) return reader.Fail("devices", "not an array");
  std::set<std::string> names;
  for (size_t i = 0; i < devices->size(); ++i) {
    const json& entry = (*devices)[i];
    const std::string where = "devices[" + std::to_string(i) + "]";
    if (!entry.is_object()) return reader.Fail(where, "not an object");
    Device device;
    if (Status s = reader.String(entry, "name", where, true, device.name); !s.ok()) return s;
    if (Status s = ValidateDeviceName(device.name); !s.ok()) {
      return reader.Fail(where + ".name", s.message());
    }
    if (!names.insert(device.name).second) {
      return reader.Fail(where + ".name", "device \"" + device.name + "\" is defined twice");
    }
    if (Status s = reader.Edits(entry, where, device.edits); !s.ok()) return s;
    spec.devices.push_back(std::move(device));
  }
  return spec;
}

}  // namespace gpuop::agent::cdi::inject
