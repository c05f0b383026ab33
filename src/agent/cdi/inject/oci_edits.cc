#include "agent/cdi/inject/oci_edits.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>

#include <sys/stat.h>
#include <sys/sysmacros.h>

namespace gpuop::agent::cdi::inject {
namespace {

using nlohmann::ordered_json;
using value_t = ordered_json::value_t;

const char* TypeName(value_t type) {
  return type == value_t::array ? "an array" : type == value_t::object ? "an object" : "a string";
}

// The member `key` of the object `parent`, created empty when absent or null; an error naming
// `field` (its place in config.json) when it has another type.
StatusOr<ordered_json*> Member(ordered_json& parent, const char* key, value_t type,
                               const std::string& field) {
  ordered_json& member = parent[key];
  if (member.is_null()) member = ordered_json(type);
  if (member.type() != type) {
    return Status::Error("config.json: " + field + " is not " + TypeName(type));
  }
  return &member;
}

// Walks `keys` from `config`, creating objects on the way; the last one has type `type`.
StatusOr<ordered_json*> Path(ordered_json& config, std::initializer_list<const char*> keys,
                             value_t type) {
  ordered_json* node = &config;
  std::string field;
  size_t i = 0;
  for (const char* key : keys) {
    if (!field.empty()) field += '.';
    field += key;
    const bool last = ++i == keys.size();
    StatusOr<ordered_json*> next = Member(*node, key, last ? type : value_t::object, field);
    if (!next.ok()) return next.status();
    node = *next;
  }
  return node;
}

// A non-negative integer at `keys` in config.json; 0 when absent or of another type (Go reads
// those fields as uint32, so a config with another type never reaches a runtime).
int64_t ReadId(const ordered_json& config, std::initializer_list<const char*> keys) {
  const ordered_json* node = &config;
  for (const char* key : keys) {
    if (!node->is_object()) return 0;
    const auto it = node->find(key);
    if (it == node->end()) return 0;
    node = &*it;
  }
  if (!node->is_number_unsigned()) return 0;
  const uint64_t id = node->get<uint64_t>();
  return id <= std::numeric_limits<uint32_t>::max() ? static_cast<int64_t>(id) : 0;
}

bool HasSysAdmin(const ordered_json& config) {
  const auto process = config.find("process");
  if (process == config.end() || !process->is_object()) return false;
  const auto caps = process->find("capabilities");
  if (caps == process->end() || !caps->is_object()) return false;
  const auto effective = caps->find("effective");
  if (effective == caps->end() || !effective->is_array()) return false;
  return std::any_of(effective->begin(), effective->end(), [](const ordered_json& cap) {
    return cap.is_string() && cap.get<std::string>() == "CAP_SYS_ADMIN";
  });
}

std::string Origin(const EditsSource& source) {
  return "CDI device " + source.device + " (" + source.file + ")";
}

Status ApplyEnv(ordered_json& config, const std::vector<std::string>& env) {
  if (env.empty()) return Status::Ok();
  StatusOr<ordered_json*> list = Path(config, {"process", "env"}, value_t::array);
  if (!list.ok()) return list.status();
  for (const std::string& entry : env) {
    const std::string key = entry.substr(0, entry.find('='));
    // The last entry that sets the variable is the one a process sees; replace that one.
    bool replaced = false;
    for (size_t i = (*list)->size(); i-- > 0;) {
      ordered_json& existing = (**list)[i];
      if (!existing.is_string()) {
        return Status::Error("config.json: process.env[" + std::to_string(i) + "] is not a string");
      }
      const std::string& text = existing.get_ref<const std::string&>();
      if (text.substr(0, text.find('=')) == key) {
        existing = entry;
        replaced = true;
        break;
      }
    }
    if (!replaced) (*list)->push_back(entry);
  }
  return Status::Ok();
}

Status ApplyDeviceNode(ordered_json& config, const EditsSource& source, const DeviceNode& node,
                       const StatDeviceFn& stat_device) {
  const std::string host_path = node.host_path.empty() ? node.path : node.host_path;
  std::string type = node.type;
  int64_t major = node.major.value_or(0);
  int64_t minor = node.minor.value_or(0);
  if (type.empty() || (major == 0 && type != "p")) {
    StatusOr<HostDevice> host = stat_device(host_path);
    if (!host.ok()) {
      return Status::Error(Origin(source) + ": device node " + node.path + ": " +
                           host.status().message());
    }
    if (type.empty()) {
      type = host->type;
    } else if (type != host->type) {
      return Status::Error(Origin(source) + ": device node " + node.path + " has type " + type +
                           " but the host's " + host_path + " has type " + host->type);
    }
    if (type != "p" && major == 0) {
      major = host->major;
      minor = host->minor;
    }
  }

  ordered_json device = {{"path", node.path}, {"type", type}, {"major", major}, {"minor", minor}};
  if (node.file_mode) device["fileMode"] = *node.file_mode;
  const int64_t uid = node.uid ? *node.uid : ReadId(config, {"process", "user", "uid"});
  const int64_t gid = node.gid ? *node.gid : ReadId(config, {"process", "user", "gid"});
  if (node.uid || uid > 0) device["uid"] = uid;
  if (node.gid || gid > 0) device["gid"] = gid;

  StatusOr<ordered_json*> devices = Path(config, {"linux", "devices"}, value_t::array);
  if (!devices.ok()) return devices.status();
  auto& list = **devices;
  for (size_t i = list.size(); i-- > 0;) {
    const ordered_json& existing = list[i];
    if (existing.is_object() && existing.value("path", ordered_json()) == node.path) {
      list.erase(i);
    }
  }
  list.push_back(std::move(device));

  if (type == "c" || type == "b") {
    StatusOr<ordered_json*> rules = Path(config, {"linux", "resources", "devices"}, value_t::array);
    if (!rules.ok()) return rules.status();
    (*rules)->push_back(
        ordered_json{{"allow", true},
                     {"type", type},
                     {"major", major},
                     {"minor", minor},
                     {"access", node.permissions.empty() ? "rwm" : node.permissions}});
  }
  return Status::Ok();
}

// The number of separators in the lexically cleaned path: the order Go's filepath.Clean and
// strings.Count give CDI's mount sort.
size_t Depth(const ordered_json& mount) {
  if (!mount.is_object()) return 0;
  const auto destination = mount.find("destination");
  if (destination == mount.end() || !destination->is_string()) return 0;
  std::string clean =
      std::filesystem::path(destination->get<std::string>()).lexically_normal().string();
  while (clean.size() > 1 && clean.back() == '/') clean.pop_back();
  return static_cast<size_t>(std::count(clean.begin(), clean.end(), '/'));
}

Status ApplyMounts(ordered_json& config, const std::vector<const Mount*>& mounts) {
  if (mounts.empty()) return Status::Ok();
  StatusOr<ordered_json*> list = Path(config, {"mounts"}, value_t::array);
  if (!list.ok()) return list.status();
  for (const Mount* mount : mounts) {
    for (size_t i = (*list)->size(); i-- > 0;) {
      const ordered_json& existing = (**list)[i];
      if (existing.is_object() &&
          existing.value("destination", ordered_json()) == mount->container_path) {
        (*list)->erase(i);
      }
    }
    ordered_json entry = {{"destination", mount->container_path},
                          {"type", mount->type.empty() ? "bind" : mount->type},
                          {"source", mount->host_path}};
    if (!mount->options.empty()) entry["options"] = mount->options;
    (*list)->push_back(std::move(entry));
  }
  std::stable_sort(
      (*list)->begin(), (*list)->end(),
      [](const ordered_json& a, const ordered_json& b) { return Depth(a) < Depth(b); });
  return Status::Ok();
}

Status ApplyHook(ordered_json& config, const Hook& hook) {
  StatusOr<ordered_json*> hooks = Path(config, {"hooks"}, value_t::object);
  if (!hooks.ok()) return hooks.status();
  StatusOr<ordered_json*> list =
      Member(**hooks, hook.hook_name.c_str(), value_t::array, "hooks." + hook.hook_name);
  if (!list.ok()) return list.status();
  ordered_json entry = {{"path", hook.path}};
  if (!hook.args.empty()) entry["args"] = hook.args;
  if (!hook.env.empty()) entry["env"] = hook.env;
  if (hook.timeout) entry["timeout"] = *hook.timeout;
  (*list)->push_back(std::move(entry));
  return Status::Ok();
}

Status ApplyGids(ordered_json& config, const std::vector<uint32_t>& gids) {
  if (std::all_of(gids.begin(), gids.end(), [](uint32_t gid) { return gid == 0; })) {
    return Status::Ok();
  }
  StatusOr<ordered_json*> list =
      Path(config, {"process", "user", "additionalGids"}, value_t::array);
  if (!list.ok()) return list.status();
  for (uint32_t gid : gids) {
    if (gid == 0) continue;
    const bool present = std::any_of((*list)->begin(), (*list)->end(), [&](const ordered_json& g) {
      return g.is_number_integer() && g.get<int64_t>() == gid;
    });
    if (!present) (*list)->push_back(gid);
  }
  return Status::Ok();
}

Status ApplyAll(ordered_json& config, const std::vector<EditsSource>& sources,
                const StatDeviceFn& stat_device) {
  std::vector<std::string> env;
  std::vector<const Mount*> mounts;
  std::vector<uint32_t> gids;
  for (const EditsSource& source : sources) {
    env.insert(env.end(), source.edits->env.begin(), source.edits->env.end());
    for (const Mount& mount : source.edits->mounts) mounts.push_back(&mount);
    gids.insert(gids.end(), source.edits->additional_gids.begin(),
                source.edits->additional_gids.end());
  }
  if (Status s = ApplyEnv(config, env); !s.ok()) return s;
  for (const EditsSource& source : sources) {
    for (const DeviceNode& node : source.edits->device_nodes) {
      if (Status s = ApplyDeviceNode(config, source, node, stat_device); !s.ok()) return s;
    }
  }
  if (Status s = ApplyMounts(config, mounts); !s.ok()) return s;
  for (const EditsSource& source : sources) {
    for (const Hook& hook : source.edits->hooks) {
      if (Status s = ApplyHook(config, hook); !s.ok()) return s;
    }
  }
  return ApplyGids(config, gids);
}

}  // namespace

std::vector<EditsSource> CollectEdits(const std::vector<ResolvedDevice>& devices) {
  std::vector<EditsSource> out;
  std::set<const Spec*> seen;
  for (const ResolvedDevice& device : devices) {
    const std::string name = device.name.full();
    if (seen.insert(device.spec.get()).second) {
      out.push_back({.device = name, .file = device.spec->file, .edits = &device.spec->edits});
    }
    out.push_back({.device = name, .file = device.spec->file, .edits = &device.device->edits});
  }
  return out;
}

StatusOr<HostDevice> StatHostDevice(const std::string& host_path) {
  struct stat info {};
  if (::stat(host_path.c_str(), &info) != 0) {
    return Status::Error("stat host device " + host_path + ": " + std::strerror(errno), errno);
  }
  HostDevice out;
  switch (info.st_mode & S_IFMT) {
    case S_IFCHR:
      out.type = "c";
      break;
    case S_IFBLK:
      out.type = "b";
      break;
    case S_IFIFO:
      out.type = "p";
      return out;
    default:
      return Status::Error("host device " + host_path +
                           " is not a character or block device or a FIFO");
  }
  out.major = major(info.st_rdev);
  out.minor = minor(info.st_rdev);
  return out;
}

Status ApplyEdits(ordered_json& config, const std::vector<EditsSource>& sources,
                  const StatDeviceFn& stat_device) {
  if (!config.is_object()) return Status::Error("config.json is not a JSON object");
  const bool sys_admin = HasSysAdmin(config);
  for (const EditsSource& source : sources) {
    if (!source.edits->unsupported.empty()) {
      return Status::Error(Origin(source) + ": " + source.edits->unsupported.front() +
                           " is not supported by gpuop-container-runtime");
    }
    for (const DeviceNode& node : source.edits->device_nodes) {
      if (!sys_admin && node.path.starts_with(kSysAdminDevicePrefix)) {
        return Status::Error(Origin(source) + ": device node " + node.path +
                             " requires CAP_SYS_ADMIN in the container's effective capabilities "
                             "(securityContext.capabilities.add: [\"SYS_ADMIN\"])");
      }
    }
  }
  ordered_json edited = config;
  if (Status s = ApplyAll(edited, sources, stat_device); !s.ok()) return s;
  config = std::move(edited);
  return Status::Ok();
}

}  // namespace gpuop::agent::cdi::inject
