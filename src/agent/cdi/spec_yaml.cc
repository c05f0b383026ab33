// YAML serialisation of the CDI spec model.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "agent/cdi/spec.h"

namespace gpuop::agent::cdi {
namespace {

void Str(YAML::Emitter& out, const char* key, const std::string& value) {
  out << YAML::Key << key << YAML::Value << YAML::DoubleQuoted << value;
}

void StrIf(YAML::Emitter& out, const char* key, const std::string& value) {
  if (!value.empty()) Str(out, key, value);
}

template <typename T>
void IntIf(YAML::Emitter& out, const char* key, const std::optional<T>& value) {
  if (value.has_value()) out << YAML::Key << key << YAML::Value << *value;
}

void StrsIf(YAML::Emitter& out, const char* key, const std::vector<std::string>& values) {
  if (values.empty()) return;
  out << YAML::Key << key << YAML::Value << YAML::BeginSeq;
  for (const std::string& value : values) out << YAML::DoubleQuoted << value;
  out << YAML::EndSeq;
}

void MapIf(YAML::Emitter& out, const char* key, const std::map<std::string, std::string>& values) {
  if (values.empty()) return;
  out << YAML::Key << key << YAML::Value << YAML::BeginMap;
  for (const auto& [name, value] : values) {
    out << YAML::Key << YAML::DoubleQuoted << name << YAML::Value << YAML::DoubleQuoted << value;
  }
  out << YAML::EndMap;
}

void Edits(YAML::Emitter& out, const ContainerEdits& edits) {
  out << YAML::BeginMap;
  StrsIf(out, "env", edits.env);
  if (!edits.device_nodes.empty()) {
    out << YAML::Key << "deviceNodes" << YAML::Value << YAML::BeginSeq;
    for (const DeviceNode& node : edits.device_nodes) {
      out << YAML::BeginMap;
      Str(out, "path", node.path);
      StrIf(out, "hostPath", node.host_path);
      StrIf(out, "type", node.type);
      IntIf(out, "major", node.major);
      IntIf(out, "minor", node.minor);
      IntIf(out, "fileMode", node.file_mode);
      StrIf(out, "permissions", node.permissions);
      IntIf(out, "uid", node.uid);
      IntIf(out, "gid", node.gid);
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  if (!edits.mounts.empty()) {
    out << YAML::Key << "mounts" << YAML::Value << YAML::BeginSeq;
    for (const Mount& mount : edits.mounts) {
      out << YAML::BeginMap;
      Str(out, "hostPath", mount.host_path);
      Str(out, "containerPath", mount.container_path);
      StrsIf(out, "options", mount.options);
      StrIf(out, "type", mount.type);
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  if (!edits.hooks.empty()) {
    out << YAML::Key << "hooks" << YAML::Value << YAML::BeginSeq;
    for (const Hook& hook : edits.hooks) {
      out << YAML::BeginMap;
      Str(out, "hookName", hook.hook_name);
      Str(out, "path", hook.path);
      StrsIf(out, "args", hook.args);
      StrsIf(out, "env", hook.env);
      IntIf(out, "timeout", hook.timeout);
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  if (!edits.additional_gids.empty()) {
    out << YAML::Key << "additionalGids" << YAML::Value << YAML::BeginSeq;
    for (uint32_t gid : edits.additional_gids) out << gid;
    out << YAML::EndSeq;
  }
  if (!edits.net_devices.empty()) {
    out << YAML::Key << "netDevices" << YAML::Value << YAML::BeginSeq;
    for (const NetDevice& device : edits.net_devices) {
      out << YAML::BeginMap;
      Str(out, "hostInterfaceName", device.host_interface_name);
      Str(out, "name", device.name);
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  out << YAML::EndMap;
}

}  // namespace

std::string SpecToYaml(const Spec& spec) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  Str(out, "cdiVersion", spec.cdi_version);
  Str(out, "kind", spec.kind);
  MapIf(out, "annotations", spec.annotations);
  out << YAML::Key << "devices" << YAML::Value << YAML::BeginSeq;
  for (const Device& device : spec.devices) {
    out << YAML::BeginMap;
    Str(out, "name", device.name);
    MapIf(out, "annotations", device.annotations);
    out << YAML::Key << "containerEdits" << YAML::Value;
    Edits(out, device.container_edits);
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  if (!spec.container_edits.empty()) {
    out << YAML::Key << "containerEdits" << YAML::Value;
    Edits(out, spec.container_edits);
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace gpuop::agent::cdi
