// The scenario parser's MIG tables, topology overrides and timeline.

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "hw/nvml/nvml_abi.h"
#include "test/fakes/nvml/scenario_parse_internal.h"
#include "test/fakes/nvml/yaml_reader.h"

namespace gpuop::fakenvml {
namespace {

// Compute-instance sizes NVML has profiles for (NVML_COMPUTE_INSTANCE_PROFILE_*).
bool IsComputeSize(unsigned int slices) {
  return slices == 1 || slices == 2 || slices == 3 || slices == 4 || slices == 6 || slices == 7 ||
         slices == 8;
}

absl::StatusOr<GiProfile> ReadProfile(const YAML::Node& node, const std::string& path,
                                      unsigned int memory_slots) {
  GPUOP_RETURN_IF_ERROR(
      CheckKeys(node, path,
                {"name", "index", "id", "slices", "instances", "memory_mib", "multiprocessors",
                 "copy_engines", "decoders", "encoders", "jpegs", "ofas", "placement_size",
                 "placements", "compute_slices"}));
  for (const char* key : {"name", "index", "id", "slices", "instances", "memory_mib",
                          "multiprocessors", "placement_size", "placements"}) {
    if (!node[key]) return FieldError(ChildPath(path, key), "required");
  }
  GiProfile profile;
  auto at = [&](const char* key) { return ChildPath(path, key); };
  GPUOP_ASSIGN_OR_RETURN(profile.name, ReadString(node["name"], at("name")));
  GPUOP_ASSIGN_OR_RETURN(profile.index,
                         ReadUint(node["index"], at("index"), NVML_GPU_INSTANCE_PROFILE_COUNT - 1));
  GPUOP_ASSIGN_OR_RETURN(profile.id, ReadUint(node["id"], at("id"), 255));
  GPUOP_ASSIGN_OR_RETURN(profile.slices, ReadUint(node["slices"], at("slices"), 64));
  GPUOP_ASSIGN_OR_RETURN(profile.instances, ReadUint(node["instances"], at("instances"), 64));
  GPUOP_ASSIGN_OR_RETURN(profile.memory_mib,
                         ReadUint(node["memory_mib"], at("memory_mib"), 1ULL << 24));
  GPUOP_ASSIGN_OR_RETURN(profile.multiprocessors,
                         ReadUint(node["multiprocessors"], at("multiprocessors"), 1024));
  const std::pair<const char*, unsigned int*> engines[] = {{"copy_engines", &profile.copy_engines},
                                                           {"decoders", &profile.decoders},
                                                           {"encoders", &profile.encoders},
                                                           {"jpegs", &profile.jpegs},
                                                           {"ofas", &profile.ofas}};
  for (const auto& [key, out] : engines) {
    if (node[key]) {
      GPUOP_ASSIGN_OR_RETURN(*out, ReadUint(node[key], at(key), 64));
    }
  }
  GPUOP_ASSIGN_OR_RETURN(profile.placement_size,
                         ReadUint(node["placement_size"], at("placement_size"), memory_slots));
  if (profile.slices == 0 || profile.instances == 0 || profile.placement_size == 0) {
    return FieldError(path, "slices, instances and placement_size must be positive");
  }
  GPUOP_ASSIGN_OR_RETURN(profile.placement_starts,
                         ReadUintList(node["placements"], at("placements"), memory_slots - 1));
  if (profile.placement_starts.empty()) return FieldError(at("placements"), "empty");
  for (const unsigned int start : profile.placement_starts) {
    if (start + profile.placement_size > memory_slots) {
      return FieldError(at("placements"),
                        absl::StrCat("start ", start, " + placement_size ", profile.placement_size,
                                     " exceeds memory_slots ", memory_slots));
    }
  }
  std::sort(profile.placement_starts.begin(), profile.placement_starts.end());
  profile.compute_slices = {profile.slices};
  if (node["compute_slices"]) {
    GPUOP_ASSIGN_OR_RETURN(profile.compute_slices,
                           ReadUintList(node["compute_slices"], at("compute_slices"), 8));
  }
  for (const unsigned int slices : profile.compute_slices) {
    if (!IsComputeSize(slices) || slices > profile.slices) {
      return FieldError(
          at("compute_slices"),
          absl::StrCat(slices, " is not 1, 2, 3, 4, 6, 7 or 8 slices within ", profile.slices));
    }
  }
  return profile;
}

absl::StatusOr<Action::Kind> SoleAction(const YAML::Node& node, absl::string_view path) {
  static constexpr std::pair<const char*, Action::Kind> kKeys[] = {
      {"set", Action::Kind::kSet},
      {"series", Action::Kind::kSet},
      {"xid", Action::Kind::kXid},
      {"ecc_sbe", Action::Kind::kEccSingle},
      {"ecc_dbe", Action::Kind::kEccDouble},
      {"lost", Action::Kind::kLost},
      {"recover", Action::Kind::kRecover},
      {"process", Action::Kind::kProcessStart},
      {"process_exit", Action::Kind::kProcessExit}};
  int found = 0;
  Action::Kind kind = Action::Kind::kSet;
  for (const auto& [key, value] : kKeys) {
    if (!node[key]) continue;
    ++found;
    kind = value;
  }
  if (found != 1) {
    return FieldError(path,
                      "needs exactly one of set, series, xid, ecc_sbe, ecc_dbe, lost, "
                      "recover, process, process_exit");
  }
  for (const char* flag : {"ecc_sbe", "ecc_dbe", "lost", "recover"}) {
    if (!node[flag]) continue;
    GPUOP_ASSIGN_OR_RETURN(const bool value, ReadBool(node[flag], ChildPath(path, flag)));
    if (!value) return FieldError(ChildPath(path, flag), "only true makes sense");
  }
  return kind;
}

// Adds `set` (a map of field: value) or `series` (field: [values], one per `every`).
absl::Status ReadSets(const YAML::Node& node, const std::string& path, const TimedAction& base,
                      std::vector<TimedAction>& out) {
  const bool series = node["series"].IsDefined();
  const char* key = series ? "series" : "set";
  const std::string map_path = ChildPath(path, key);
  GPUOP_RETURN_IF_ERROR(RequireMap(node[key], map_path));
  int64_t every_ms = 0;
  if (series) {
    if (!node["every"]) return FieldError(ChildPath(path, "every"), "required with series");
    GPUOP_ASSIGN_OR_RETURN(every_ms, ReadDurationMs(node["every"], ChildPath(path, "every")));
  } else if (node["every"]) {
    return FieldError(ChildPath(path, "every"), "only with series");
  }
  for (const auto& entry : node[key]) {
    const std::string name = entry.first.Scalar();
    const std::string field_path = ChildPath(map_path, name);
    const FieldInfo* info = FindField(name);
    if (info == nullptr) {
      return FieldError(field_path, absl::StrCat("unknown field; known: ", FieldNames()));
    }
    std::vector<YAML::Node> values;
    if (series) {
      GPUOP_RETURN_IF_ERROR(RequireSequence(entry.second, field_path));
      for (const auto& value : entry.second) values.push_back(value);
    } else {
      values.push_back(entry.second);
    }
    for (size_t i = 0; i < values.size(); ++i) {
      TimedAction timed = base;
      timed.at_ms += static_cast<int64_t>(i) * every_ms;
      timed.action.field = info->field;
      GPUOP_ASSIGN_OR_RETURN(timed.action.value,
                             ReadNumber(values[i], series ? ItemPath(field_path, i) : field_path,
                                        info->min, info->max));
      out.push_back(timed);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<MigSpec> ReadMigSpec(const YAML::Node& node, absl::string_view path) {
  GPUOP_RETURN_IF_ERROR(CheckKeys(node, path, {"memory_slots", "sm_per_slice", "profiles"}));
  MigSpec mig;
  if (node["memory_slots"]) {
    GPUOP_ASSIGN_OR_RETURN(mig.memory_slots,
                           ReadUint(node["memory_slots"], ChildPath(path, "memory_slots"), 64));
    if (mig.memory_slots == 0) return FieldError(ChildPath(path, "memory_slots"), "must be > 0");
  }
  if (node["sm_per_slice"]) {
    GPUOP_ASSIGN_OR_RETURN(mig.sm_per_slice,
                           ReadUint(node["sm_per_slice"], ChildPath(path, "sm_per_slice"), 1024));
  }
  const std::string profiles_path = ChildPath(path, "profiles");
  if (!node["profiles"]) return FieldError(profiles_path, "required");
  GPUOP_RETURN_IF_ERROR(RequireSequence(node["profiles"], profiles_path));
  std::set<unsigned int> indexes;
  std::set<unsigned int> ids;
  std::set<std::string> names;
  for (size_t i = 0; i < node["profiles"].size(); ++i) {
    const std::string item = ItemPath(profiles_path, i);
    GPUOP_ASSIGN_OR_RETURN(GiProfile profile,
                           ReadProfile(node["profiles"][i], item, mig.memory_slots));
    if (!indexes.insert(profile.index).second || !ids.insert(profile.id).second ||
        !names.insert(profile.name).second) {
      return FieldError(item, "index, id and name must be unique");
    }
    mig.profiles.push_back(std::move(profile));
  }
  return mig;
}

absl::StatusOr<std::vector<MigInstanceSpec>> ReadMigInstances(const YAML::Node& node,
                                                              absl::string_view path,
                                                              const GpuSpec& gpu) {
  GPUOP_RETURN_IF_ERROR(RequireSequence(node, path));
  if (node.size() > 0 && !gpu.mig_enabled) return FieldError(path, "needs mig_mode: enabled");
  std::vector<MigInstanceSpec> instances;
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string item = ItemPath(path, i);
    GPUOP_RETURN_IF_ERROR(CheckKeys(node[i], item, {"profile", "start", "compute"}));
    MigInstanceSpec instance;
    if (!node[i]["profile"]) return FieldError(ChildPath(item, "profile"), "required");
    GPUOP_ASSIGN_OR_RETURN(instance.profile,
                           ReadString(node[i]["profile"], ChildPath(item, "profile")));
    const GiProfile* profile = nullptr;
    for (const GiProfile& candidate : gpu.mig->profiles) {
      if (candidate.name == instance.profile) profile = &candidate;
    }
    if (profile == nullptr) return FieldError(ChildPath(item, "profile"), "not in the mig table");
    if (node[i]["start"]) {
      GPUOP_ASSIGN_OR_RETURN(instance.start, ReadUint(node[i]["start"], ChildPath(item, "start"),
                                                      gpu.mig->memory_slots - 1));
    }
    instance.compute_slices = {profile->slices};
    if (node[i]["compute"]) {
      GPUOP_ASSIGN_OR_RETURN(instance.compute_slices,
                             ReadUintList(node[i]["compute"], ChildPath(item, "compute"), 8));
    }
    for (const unsigned int slices : instance.compute_slices) {
      if (std::find(profile->compute_slices.begin(), profile->compute_slices.end(), slices) ==
          profile->compute_slices.end()) {
        return FieldError(ChildPath(item, "compute"),
                          absl::StrCat(slices,
                                       "-slice compute instances are not in the profile's "
                                       "compute_slices"));
      }
    }
    instances.push_back(std::move(instance));
  }
  return instances;
}

absl::StatusOr<std::vector<TopologyOverride>> ReadTopology(const YAML::Node& node) {
  static constexpr std::pair<const char*, int> kLevels[] = {
      {"internal", NVML_TOPOLOGY_INTERNAL}, {"single", NVML_TOPOLOGY_SINGLE},
      {"multiple", NVML_TOPOLOGY_MULTIPLE}, {"hostbridge", NVML_TOPOLOGY_HOSTBRIDGE},
      {"node", NVML_TOPOLOGY_NODE},         {"system", NVML_TOPOLOGY_SYSTEM}};
  GPUOP_RETURN_IF_ERROR(RequireSequence(node, "topology"));
  std::vector<TopologyOverride> overrides;
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string item = ItemPath("topology", i);
    GPUOP_RETURN_IF_ERROR(CheckKeys(node[i], item, {"gpus", "level"}));
    if (!node[i]["gpus"] || !node[i]["level"]) return FieldError(item, "needs gpus and level");
    GPUOP_ASSIGN_OR_RETURN(const std::vector<unsigned int> gpus,
                           ReadUintList(node[i]["gpus"], ChildPath(item, "gpus"), 1023));
    if (gpus.size() != 2 || gpus[0] == gpus[1]) {
      return FieldError(ChildPath(item, "gpus"), "expected two different GPU indexes");
    }
    GPUOP_ASSIGN_OR_RETURN(const std::string level,
                           ReadString(node[i]["level"], ChildPath(item, "level")));
    TopologyOverride entry{static_cast<int>(gpus[0]), static_cast<int>(gpus[1]), -1};
    for (const auto& [name, value] : kLevels) {
      if (level == name) entry.level = value;
    }
    if (entry.level < 0) {
      return FieldError(ChildPath(item, "level"),
                        "expected internal, single, multiple, hostbridge, node or system");
    }
    overrides.push_back(entry);
  }
  return overrides;
}

absl::StatusOr<std::vector<TimedAction>> ReadTimeline(const YAML::Node& node) {
  GPUOP_RETURN_IF_ERROR(RequireSequence(node, "timeline"));
  std::vector<TimedAction> timeline;
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string item = ItemPath("timeline", i);
    const YAML::Node entry = node[i];
    GPUOP_RETURN_IF_ERROR(
        CheckKeys(entry, item,
                  {"at", "gpu", "set", "series", "every", "xid", "gpu_instance", "compute_instance",
                   "ecc_sbe", "ecc_dbe", "lost", "recover", "process", "process_exit"}));
    if (!entry["at"]) return FieldError(ChildPath(item, "at"), "required");
    if (!entry["gpu"]) return FieldError(ChildPath(item, "gpu"), "required (an index or all)");
    TimedAction timed;
    GPUOP_ASSIGN_OR_RETURN(timed.at_ms, ReadDurationMs(entry["at"], ChildPath(item, "at")));
    if (!(entry["gpu"].IsScalar() && entry["gpu"].Scalar() == "all")) {
      GPUOP_ASSIGN_OR_RETURN(timed.action.gpu,
                             ReadUint(entry["gpu"], ChildPath(item, "gpu"), 1023));
    }
    GPUOP_ASSIGN_OR_RETURN(timed.action.kind, SoleAction(entry, item));
    if (entry["gpu_instance"].IsDefined() != entry["compute_instance"].IsDefined() ||
        (entry["gpu_instance"] && timed.action.kind != Action::Kind::kXid)) {
      return FieldError(item, "gpu_instance and compute_instance go together, with xid");
    }
    if (timed.action.kind == Action::Kind::kSet) {
      GPUOP_RETURN_IF_ERROR(ReadSets(entry, item, timed, timeline));
      continue;
    }
    if (timed.action.kind == Action::Kind::kXid) {
      GPUOP_ASSIGN_OR_RETURN(timed.action.xid,
                             ReadUint(entry["xid"], ChildPath(item, "xid"), 0xffffffffu));
      if (entry["gpu_instance"]) {
        GPUOP_ASSIGN_OR_RETURN(timed.action.gpu_instance,
                               ReadUint(entry["gpu_instance"], ChildPath(item, "gpu_instance")));
        GPUOP_ASSIGN_OR_RETURN(
            timed.action.compute_instance,
            ReadUint(entry["compute_instance"], ChildPath(item, "compute_instance")));
      }
    }
    if (timed.action.kind == Action::Kind::kProcessStart) {
      GPUOP_ASSIGN_OR_RETURN(timed.action.process,
                             ReadProcess(entry["process"], ChildPath(item, "process")));
    }
    if (timed.action.kind == Action::Kind::kProcessExit) {
      GPUOP_ASSIGN_OR_RETURN(timed.action.process.pid,
                             ReadUint(entry["process_exit"], ChildPath(item, "process_exit")));
    }
    timeline.push_back(timed);
  }
  std::stable_sort(timeline.begin(), timeline.end(),
                   [](const TimedAction& a, const TimedAction& b) { return a.at_ms < b.at_ms; });
  return timeline;
}

}  // namespace gpuop::fakenvml
