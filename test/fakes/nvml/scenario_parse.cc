// The scenario YAML parser (format in README.md). Every error names the field it is about.

#include <algorithm>
#include <set>

#include <yaml-cpp/yaml.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "hw/nvml/nvml_abi.h"
#include "test/fakes/nvml/ids.h"
#include "test/fakes/nvml/scenario.h"
#include "test/fakes/nvml/scenario_parse_internal.h"
#include "test/fakes/nvml/yaml_reader.h"

namespace gpuop::fakenvml {
namespace {

constexpr unsigned int kMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS in the 11.8-13.2 headers

absl::StatusOr<unsigned int> ReadArchitecture(const YAML::Node& node, absl::string_view path) {
  static constexpr std::pair<absl::string_view, unsigned int> kNames[] = {
      {"kepler", NVML_DEVICE_ARCH_KEPLER},
      {"maxwell", NVML_DEVICE_ARCH_MAXWELL},
      {"pascal", NVML_DEVICE_ARCH_PASCAL},
      {"volta", NVML_DEVICE_ARCH_VOLTA},
      {"turing", NVML_DEVICE_ARCH_TURING},
      {"ampere", NVML_DEVICE_ARCH_AMPERE},
      {"ada", NVML_DEVICE_ARCH_ADA},
      {"hopper", NVML_DEVICE_ARCH_HOPPER},
      {"blackwell", NVML_DEVICE_ARCH_BLACKWELL},
      {"rubin", NVML_DEVICE_ARCH_RUBIN}};
  GPUOP_ASSIGN_OR_RETURN(const std::string text, ReadString(node, path));
  for (const auto& [name, value] : kNames) {
    if (absl::AsciiStrToLower(text) == name) return value;
  }
  return FieldError(path, absl::StrCat("unknown architecture \"", text,
                                       "\" (kepler, maxwell, pascal, volta, turing, ampere, ada, "
                                       "hopper, blackwell, rubin)"));
}

// "8.9" -> {8, 9}.
absl::Status ReadComputeCapability(const YAML::Node& node, absl::string_view path, GpuSpec& gpu) {
  GPUOP_ASSIGN_OR_RETURN(const std::string text, ReadString(node, path));
  const std::vector<absl::string_view> parts = absl::StrSplit(text, '.');
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &gpu.compute_major) ||
      !absl::SimpleAtoi(parts[1], &gpu.compute_minor) || gpu.compute_major < 1 ||
      gpu.compute_minor < 0 || gpu.compute_minor > 9) {
    return FieldError(path,
                      absl::StrCat("expected major.minor such as \"9.0\", got \"", text, "\""));
  }
  return absl::OkStatus();
}

// fabric: {cluster_uuid: <32 hex digits, dashes allowed>, clique_id: N, state: completed}.
absl::StatusOr<FabricSpec> ReadFabric(const YAML::Node& node, absl::string_view path) {
  GPUOP_RETURN_IF_ERROR(CheckKeys(node, path, {"cluster_uuid", "clique_id", "state"}));
  const std::string uuid_path = ChildPath(path, "cluster_uuid");
  if (!node["cluster_uuid"]) return FieldError(uuid_path, "required");
  GPUOP_ASSIGN_OR_RETURN(const std::string text, ReadString(node["cluster_uuid"], uuid_path));
  std::string hex;
  for (char c : text) {
    if (c != '-') hex += c;
  }
  FabricSpec fabric;
  bool valid = hex.size() == 32;
  for (size_t i = 0; valid && i < 16; ++i) {
    int byte = 0;
    valid = absl::SimpleHexAtoi(hex.substr(2 * i, 2), &byte);
    fabric.cluster_uuid[i] = static_cast<unsigned char>(byte);
  }
  if (!valid) {
    return FieldError(uuid_path,
                      absl::StrCat("expected a UUID of 32 hex digits, got \"", text, "\""));
  }
  if (node["clique_id"]) {
    GPUOP_ASSIGN_OR_RETURN(fabric.clique_id,
                           ReadUint(node["clique_id"], ChildPath(path, "clique_id")));
  }
  if (node["state"]) {
    static constexpr std::pair<absl::string_view, unsigned char> kStates[] = {
        {"not_started", NVML_GPU_FABRIC_STATE_NOT_STARTED},
        {"in_progress", NVML_GPU_FABRIC_STATE_IN_PROGRESS},
        {"completed", NVML_GPU_FABRIC_STATE_COMPLETED}};
    GPUOP_ASSIGN_OR_RETURN(const std::string state,
                           ReadString(node["state"], ChildPath(path, "state")));
    auto it = std::find_if(std::begin(kStates), std::end(kStates),
                           [&](const auto& entry) { return entry.first == state; });
    if (it == std::end(kStates)) {
      return FieldError(ChildPath(path, "state"), "expected not_started, in_progress or completed");
    }
    fabric.state = it->second;
  }
  return fabric;
}

absl::StatusOr<PciAddress> ReadBusId(const YAML::Node& node, absl::string_view path) {
  GPUOP_ASSIGN_OR_RETURN(const std::string text, ReadString(node, path));
  const std::optional<PciAddress> pci = ParseBusId(text);
  if (!pci) {
    return FieldError(
        path, absl::StrCat("expected a PCI address such as \"0000:18:00.0\", got \"", text, "\""));
  }
  return *pci;
}

absl::Status ReadPower(const YAML::Node& node, absl::string_view path, GpuSpec& gpu) {
  GPUOP_RETURN_IF_ERROR(CheckKeys(node, path, {"default_w", "min_w", "max_w"}));
  PowerSpec power;
  unsigned int* const out[] = {&power.default_mw, &power.min_mw, &power.max_mw};
  const char* const keys[] = {"default_w", "min_w", "max_w"};
  for (int i = 0; i < 3; ++i) {
    const std::string key_path = ChildPath(path, keys[i]);
    if (!node[keys[i]]) return FieldError(key_path, "required");
    GPUOP_ASSIGN_OR_RETURN(const double watts, ReadNumber(node[keys[i]], key_path, 1, 4000));
    *out[i] = static_cast<unsigned int>(watts * 1000);
  }
  if (power.min_mw > power.max_mw || power.default_mw < power.min_mw ||
      power.default_mw > power.max_mw) {
    return FieldError(path, "need min_w <= default_w <= max_w");
  }
  gpu.power = power;
  return absl::OkStatus();
}

absl::Status ReadThermal(const YAML::Node& node, absl::string_view path, GpuSpec& gpu) {
  GPUOP_RETURN_IF_ERROR(
      CheckKeys(node, path, {"shutdown_c", "slowdown_c", "gpu_max_c", "memory_max_c"}));
  ThermalSpec thermal;
  unsigned int* const out[] = {&thermal.shutdown_c, &thermal.slowdown_c, &thermal.gpu_max_c,
                               &thermal.memory_max_c};
  const char* const keys[] = {"shutdown_c", "slowdown_c", "gpu_max_c", "memory_max_c"};
  for (int i = 0; i < 4; ++i) {
    const std::string key_path = ChildPath(path, keys[i]);
    if (!node[keys[i]]) return FieldError(key_path, "required");
    GPUOP_ASSIGN_OR_RETURN(*out[i], ReadUint(node[keys[i]], key_path, 200));
  }
  gpu.thermal = thermal;
  return absl::OkStatus();
}

absl::Status ReadClocks(const YAML::Node& node, absl::string_view path, GpuSpec& gpu) {
  const char* const keys[] = {"max_graphics_mhz", "max_sm_mhz", "max_memory_mhz", "max_video_mhz"};
  GPUOP_RETURN_IF_ERROR(CheckKeys(node, path, {keys[0], keys[1], keys[2], keys[3]}));
  unsigned int* const out[] = {&gpu.max_clocks.graphics_mhz, &gpu.max_clocks.sm_mhz,
                               &gpu.max_clocks.memory_mhz, &gpu.max_clocks.video_mhz};
  for (int i = 0; i < 4; ++i) {
    if (!node[keys[i]]) continue;
    GPUOP_ASSIGN_OR_RETURN(*out[i], ReadUint(node[keys[i]], ChildPath(path, keys[i]), 100000));
  }
  return absl::OkStatus();
}

absl::Status ReadEcc(const YAML::Node& node, absl::string_view path, GpuSpec& gpu) {
  if (node.IsScalar()) {
    GPUOP_ASSIGN_OR_RETURN(gpu.ecc_supported, ReadBool(node, path));
    gpu.ecc_enabled = gpu.ecc_supported;
    return absl::OkStatus();
  }
  GPUOP_RETURN_IF_ERROR(CheckKeys(node, path, {"supported", "enabled"}));
  if (node["supported"]) {
    GPUOP_ASSIGN_OR_RETURN(gpu.ecc_supported,
                           ReadBool(node["supported"], ChildPath(path, "supported")));
  }
  gpu.ecc_enabled = gpu.ecc_supported;
  if (node["enabled"]) {
    GPUOP_ASSIGN_OR_RETURN(gpu.ecc_enabled, ReadBool(node["enabled"], ChildPath(path, "enabled")));
  }
  if (gpu.ecc_enabled && !gpu.ecc_supported) return FieldError(path, "enabled but not supported");
  return absl::OkStatus();
}

absl::Status ReadNvLink(const YAML::Node& node, absl::string_view path, GpuSpec& gpu) {
  GPUOP_RETURN_IF_ERROR(CheckKeys(node, path, {"version", "links"}));
  if (node["version"]) {
    GPUOP_ASSIGN_OR_RETURN(gpu.nvlink_version,
                           ReadUint(node["version"], ChildPath(path, "version"), 10));
  }
  if (!node["links"]) return absl::OkStatus();
  const std::string links_path = ChildPath(path, "links");
  const YAML::Node links = node["links"];
  GPUOP_RETURN_IF_ERROR(RequireSequence(links, links_path));
  for (size_t i = 0; i < links.size(); ++i) {
    const std::string item = ItemPath(links_path, i);
    GPUOP_RETURN_IF_ERROR(CheckKeys(links[i], item, {"gpu", "nvswitch", "count", "active"}));
    LinkSpec link;
    if (links[i]["gpu"].IsDefined() == links[i]["nvswitch"].IsDefined()) {
      return FieldError(item, "needs exactly one of gpu or nvswitch");
    }
    const bool to_gpu = links[i]["gpu"].IsDefined();
    link.kind = to_gpu ? LinkSpec::Kind::kGpu : LinkSpec::Kind::kSwitch;
    const char* key = to_gpu ? "gpu" : "nvswitch";
    GPUOP_ASSIGN_OR_RETURN(link.target, ReadUint(links[i][key], ChildPath(item, key), 1023));
    uint64_t count = 1;
    if (links[i]["count"]) {
      GPUOP_ASSIGN_OR_RETURN(count, ReadUint(links[i]["count"], ChildPath(item, "count"), 18));
    }
    if (links[i]["active"]) {
      GPUOP_ASSIGN_OR_RETURN(link.active, ReadBool(links[i]["active"], ChildPath(item, "active")));
    }
    gpu.links.insert(gpu.links.end(), count, link);
    if (gpu.links.size() > kMaxLinks) {
      return FieldError(links_path, absl::StrCat("more than ", kMaxLinks, " links"));
    }
  }
  if (!gpu.links.empty() && gpu.nvlink_version == 0) return FieldError(path, "version required");
  return absl::OkStatus();
}

absl::Status ReadProcesses(const YAML::Node& node, absl::string_view path, GpuSpec& gpu) {
  GPUOP_RETURN_IF_ERROR(RequireSequence(node, path));
  for (size_t i = 0; i < node.size(); ++i) {
    GPUOP_ASSIGN_OR_RETURN(ProcessSpec process, ReadProcess(node[i], ItemPath(path, i)));
    gpu.processes.push_back(process);
  }
  return absl::OkStatus();
}

absl::Status ReadTelemetry(const YAML::Node& node, absl::string_view path, FieldValues& values) {
  GPUOP_RETURN_IF_ERROR(RequireMap(node, path));
  for (const auto& entry : node) {
    const std::string key = entry.first.Scalar();
    const FieldInfo* info = FindField(key);
    if (info == nullptr) {
      return FieldError(ChildPath(path, key), absl::StrCat("unknown field; known: ", FieldNames()));
    }
    GPUOP_ASSIGN_OR_RETURN(values[static_cast<int>(info->field)],
                           ReadNumber(entry.second, ChildPath(path, key), info->min, info->max));
  }
  return absl::OkStatus();
}

absl::Status ReadGpu(const YAML::Node& node, const std::string& path, size_t index,
                     absl::string_view seed, GpuSpec& gpu) {
  GPUOP_RETURN_IF_ERROR(CheckKeys(node, path,
                                  {"model",
                                   "name",
                                   "uuid",
                                   "serial",
                                   "pci_bus_id",
                                   "pci_device_id",
                                   "pci_subsystem_id",
                                   "architecture",
                                   "compute_capability",
                                   "memory_mib",
                                   "memory_reserved_mib",
                                   "numa_node",
                                   "gpu_numa_node",
                                   "minor_number",
                                   "host_bridge",
                                   "pcie_switches",
                                   "power",
                                   "thermal",
                                   "clocks",
                                   "ecc",
                                   "mig",
                                   "mig_mode",
                                   "mig_mode_activation",
                                   "mig_instances",
                                   "nvlink",
                                   "fabric",
                                   "processes",
                                   "telemetry",
                                   "errors"}));
  for (const char* key : {"name", "pci_bus_id", "pci_device_id", "architecture",
                          "compute_capability", "memory_mib"}) {
    if (!node[key]) return FieldError(ChildPath(path, key), "required");
  }
  auto at = [&](const char* key) { return ChildPath(path, key); };
  GPUOP_ASSIGN_OR_RETURN(gpu.name, ReadString(node["name"], at("name")));
  GPUOP_ASSIGN_OR_RETURN(gpu.pci, ReadBusId(node["pci_bus_id"], at("pci_bus_id")));
  GPUOP_ASSIGN_OR_RETURN(gpu.pci_device_id,
                         ReadUint(node["pci_device_id"], at("pci_device_id"), 0xffff));
  gpu.pci_subsystem_id = gpu.pci_device_id << 16 | 0x10de;
  if (node["pci_subsystem_id"]) {
    GPUOP_ASSIGN_OR_RETURN(gpu.pci_subsystem_id,
                           ReadUint(node["pci_subsystem_id"], at("pci_subsystem_id")));
  }
  GPUOP_ASSIGN_OR_RETURN(gpu.architecture,
                         ReadArchitecture(node["architecture"], at("architecture")));
  GPUOP_RETURN_IF_ERROR(
      ReadComputeCapability(node["compute_capability"], at("compute_capability"), gpu));
  GPUOP_ASSIGN_OR_RETURN(gpu.memory_mib,
                         ReadUint(node["memory_mib"], at("memory_mib"), 1ULL << 24));
  if (node["memory_reserved_mib"]) {
    GPUOP_ASSIGN_OR_RETURN(gpu.reserved_mib, ReadUint(node["memory_reserved_mib"],
                                                      at("memory_reserved_mib"), gpu.memory_mib));
  }
  const std::string bus_id = FormatBusId(gpu.pci);
  gpu.uuid = absl::StrCat("GPU-", DerivedUuid(absl::StrCat(seed, "/uuid/", bus_id)));
  if (node["uuid"]) {
    GPUOP_ASSIGN_OR_RETURN(gpu.uuid, ReadString(node["uuid"], at("uuid")));
    if (!absl::StartsWith(gpu.uuid, "GPU-") || gpu.uuid.size() >= NVML_DEVICE_UUID_V2_BUFFER_SIZE) {
      return FieldError(at("uuid"), "expected GPU-<uuid>");
    }
  }
  gpu.serial = DerivedSerial(absl::StrCat(seed, "/serial/", bus_id));
  if (node["serial"]) {
    GPUOP_ASSIGN_OR_RETURN(gpu.serial, ReadString(node["serial"], at("serial")));
  }
  if (gpu.serial.size() >= NVML_DEVICE_SERIAL_BUFFER_SIZE) {
    return FieldError(at("serial"), "longer than 29 characters");
  }
  if (node["numa_node"]) {
    GPUOP_ASSIGN_OR_RETURN(gpu.numa_node, ReadUint(node["numa_node"], at("numa_node"), 1023));
  }
  if (node["gpu_numa_node"]) {
    GPUOP_ASSIGN_OR_RETURN(gpu.gpu_numa_node,
                           ReadUint(node["gpu_numa_node"], at("gpu_numa_node"), 1023));
  }
  gpu.minor_number = static_cast<unsigned int>(index);
  if (node["minor_number"]) {
    GPUOP_ASSIGN_OR_RETURN(gpu.minor_number,
                           ReadUint(node["minor_number"], at("minor_number"), 255));
  }
  if (node["host_bridge"]) {
    GPUOP_ASSIGN_OR_RETURN(gpu.host_bridge,
                           ReadUint(node["host_bridge"], at("host_bridge"), 1 << 20));
  }
  if (node["pcie_switches"]) {
    GPUOP_ASSIGN_OR_RETURN(const std::vector<unsigned int> switches,
                           ReadUintList(node["pcie_switches"], at("pcie_switches"), 1 << 20));
    gpu.pcie_switches.assign(switches.begin(), switches.end());
  }
  if (node["power"]) GPUOP_RETURN_IF_ERROR(ReadPower(node["power"], at("power"), gpu));
  if (node["thermal"]) GPUOP_RETURN_IF_ERROR(ReadThermal(node["thermal"], at("thermal"), gpu));
  if (node["clocks"]) GPUOP_RETURN_IF_ERROR(ReadClocks(node["clocks"], at("clocks"), gpu));
  if (node["ecc"]) GPUOP_RETURN_IF_ERROR(ReadEcc(node["ecc"], at("ecc"), gpu));
  if (node["mig"]) {
    GPUOP_ASSIGN_OR_RETURN(gpu.mig, ReadMigSpec(node["mig"], at("mig")));
  }
  if (node["fabric"]) {
    GPUOP_ASSIGN_OR_RETURN(gpu.fabric, ReadFabric(node["fabric"], at("fabric")));
  }
  if (node["mig_mode"]) {
    GPUOP_ASSIGN_OR_RETURN(const std::string mode, ReadString(node["mig_mode"], at("mig_mode")));
    if (mode != "enabled" && mode != "disabled") {
      return FieldError(at("mig_mode"), "expected enabled or disabled");
    }
    gpu.mig_enabled = mode == "enabled";
    if (gpu.mig_enabled && !gpu.mig) return FieldError(at("mig_mode"), "the GPU has no mig table");
  }
  if (node["mig_mode_activation"]) {
    GPUOP_ASSIGN_OR_RETURN(const std::string activation,
                           ReadString(node["mig_mode_activation"], at("mig_mode_activation")));
    if (activation != "reset" && activation != "reset_required") {
      return FieldError(at("mig_mode_activation"),
                        absl::StrCat("expected reset or reset_required, got \"", activation, "\""));
    }
    if (!gpu.mig) return FieldError(at("mig_mode_activation"), "the GPU has no mig table");
    gpu.mig_reset_required = activation == "reset_required";
  }
  if (node["mig_instances"]) {
    GPUOP_ASSIGN_OR_RETURN(gpu.mig_instances,
                           ReadMigInstances(node["mig_instances"], at("mig_instances"), gpu));
  }
  if (node["nvlink"]) GPUOP_RETURN_IF_ERROR(ReadNvLink(node["nvlink"], at("nvlink"), gpu));
  if (node["processes"]) {
    GPUOP_RETURN_IF_ERROR(ReadProcesses(node["processes"], at("processes"), gpu));
  }
  if (node["telemetry"]) {
    GPUOP_RETURN_IF_ERROR(ReadTelemetry(node["telemetry"], at("telemetry"), gpu.values));
  }
  if (node["errors"]) {
    GPUOP_ASSIGN_OR_RETURN(gpu.call_errors, ReadCallErrors(node["errors"], at("errors")));
  }
  return absl::OkStatus();
}

absl::Status ReadDriver(const YAML::Node& node, Scenario& scenario) {
  GPUOP_RETURN_IF_ERROR(CheckKeys(node, "driver", {"version", "cuda_version", "nvml_version"}));
  if (!node["version"]) return FieldError("driver.version", "required");
  if (!node["cuda_version"]) return FieldError("driver.cuda_version", "required");
  GPUOP_ASSIGN_OR_RETURN(scenario.driver_version, ReadString(node["version"], "driver.version"));
  GPUOP_ASSIGN_OR_RETURN(const std::string cuda,
                         ReadString(node["cuda_version"], "driver.cuda_version"));
  const std::vector<absl::string_view> parts = absl::StrSplit(cuda, '.');
  int major = 0;
  int minor = 0;
  const bool ok = parts.size() == 2 ? absl::SimpleAtoi(parts[0], &major) &&
                                          absl::SimpleAtoi(parts[1], &minor) && minor < 100
                                    : absl::SimpleAtoi(cuda, &scenario.cuda_version);
  if (parts.size() == 2) scenario.cuda_version = major * 1000 + minor * 10;
  if (!ok || scenario.cuda_version < 1000 || scenario.cuda_version > 99999) {
    return FieldError("driver.cuda_version",
                      absl::StrCat("expected \"12.8\" or 12080, got \"", cuda, "\""));
  }
  scenario.nvml_version = absl::StrCat(scenario.cuda_version / 1000, ".", scenario.driver_version);
  if (node["nvml_version"]) {
    GPUOP_ASSIGN_OR_RETURN(scenario.nvml_version,
                           ReadString(node["nvml_version"], "driver.nvml_version"));
  }
  return absl::OkStatus();
}

absl::Status ReadNvSwitches(const YAML::Node& node, Scenario& scenario) {
  GPUOP_RETURN_IF_ERROR(RequireSequence(node, "nvswitches"));
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string item = ItemPath("nvswitches", i);
    GPUOP_RETURN_IF_ERROR(CheckKeys(node[i], item, {"pci_bus_id", "pci_device_id"}));
    NvSwitchSpec nvswitch;
    if (!node[i]["pci_bus_id"]) return FieldError(ChildPath(item, "pci_bus_id"), "required");
    GPUOP_ASSIGN_OR_RETURN(nvswitch.pci,
                           ReadBusId(node[i]["pci_bus_id"], ChildPath(item, "pci_bus_id")));
    if (node[i]["pci_device_id"]) {
      GPUOP_ASSIGN_OR_RETURN(
          nvswitch.pci_device_id,
          ReadUint(node[i]["pci_device_id"], ChildPath(item, "pci_device_id"), 0xffff));
    }
    scenario.nvswitches.push_back(nvswitch);
  }
  return absl::OkStatus();
}

// Cross-references that need the whole document.
absl::Status Validate(const Scenario& scenario) {
  std::set<std::string> bus_ids;
  std::set<std::string> uuids;
  const int gpu_count = static_cast<int>(scenario.gpus.size());
  for (int i = 0; i < gpu_count; ++i) {
    const GpuSpec& gpu = scenario.gpus[i];
    const std::string path = ItemPath("gpus", i);
    if (!bus_ids.insert(FormatBusId(gpu.pci)).second) {
      return FieldError(ChildPath(path, "pci_bus_id"), "used by another GPU");
    }
    if (!uuids.insert(gpu.uuid).second) {
      return FieldError(ChildPath(path, "uuid"), "used by another GPU");
    }
    for (const LinkSpec& link : gpu.links) {
      const bool to_gpu = link.kind == LinkSpec::Kind::kGpu;
      const int limit = to_gpu ? gpu_count : static_cast<int>(scenario.nvswitches.size());
      if (link.target >= limit || (to_gpu && link.target == i)) {
        return FieldError(
            ChildPath(path, "nvlink.links"),
            absl::StrCat("no such ", to_gpu ? "peer GPU " : "nvswitch ", link.target));
      }
    }
  }
  for (size_t i = 0; i < scenario.topology.size(); ++i) {
    const TopologyOverride& entry = scenario.topology[i];
    if (entry.first >= gpu_count || entry.second >= gpu_count) {
      return FieldError(ItemPath("topology", i), "no such GPU");
    }
  }
  for (const TimedAction& timed : scenario.timeline) {
    const Action& action = timed.action;
    if (action.gpu >= gpu_count) {
      return FieldError("timeline", absl::StrCat("no such GPU ", action.gpu));
    }
    const bool ecc =
        action.kind == Action::Kind::kEccSingle || action.kind == Action::Kind::kEccDouble;
    if (ecc && action.gpu >= 0 && !scenario.gpus[action.gpu].ecc_enabled) {
      return FieldError("timeline",
                        absl::StrCat("ECC error on GPU ", action.gpu, ", which has ECC disabled"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Scenario> Parse(const YAML::Node& root, absl::string_view origin,
                               absl::string_view node_seed) {
  GPUOP_RETURN_IF_ERROR(
      CheckKeys(root, "",
                {"name", "uuid_seed", "device_nodes", "module_device_nodes", "driver", "models",
                 "gpus", "nvswitches", "topology", "timeline"}));
  Scenario scenario;
  scenario.name = std::string(origin);
  if (root["name"]) {
    GPUOP_ASSIGN_OR_RETURN(scenario.name, ReadString(root["name"], "name"));
  }
  std::string seed = scenario.name;
  if (root["uuid_seed"]) {
    GPUOP_ASSIGN_OR_RETURN(seed, ReadString(root["uuid_seed"], "uuid_seed"));
  }
  if (!node_seed.empty()) absl::StrAppend(&seed, "/node/", node_seed);
  if (root["device_nodes"]) {
    GPUOP_ASSIGN_OR_RETURN(scenario.device_nodes, ReadString(root["device_nodes"], "device_nodes"));
    if (!absl::StartsWith(scenario.device_nodes, "/")) {
      return FieldError("device_nodes",
                        absl::StrCat("expected an absolute directory such as /dev, got \"",
                                     scenario.device_nodes, "\""));
    }
  }
  if (root["module_device_nodes"]) {
    GPUOP_ASSIGN_OR_RETURN(scenario.module_device_nodes,
                           ReadString(root["module_device_nodes"], "module_device_nodes"));
    if (scenario.device_nodes.empty()) {
      return FieldError("module_device_nodes", "needs device_nodes");
    }
  }
  if (!root["driver"]) return FieldError("driver", "required");
  GPUOP_RETURN_IF_ERROR(ReadDriver(root["driver"], scenario));
  if (root["models"]) GPUOP_RETURN_IF_ERROR(RequireMap(root["models"], "models"));
  if (root["nvswitches"]) GPUOP_RETURN_IF_ERROR(ReadNvSwitches(root["nvswitches"], scenario));
  if (root["gpus"]) {
    const YAML::Node gpus = root["gpus"];
    GPUOP_RETURN_IF_ERROR(RequireSequence(gpus, "gpus"));
    for (size_t i = 0; i < gpus.size(); ++i) {
      std::string path = ItemPath("gpus", i);
      GPUOP_RETURN_IF_ERROR(RequireMap(gpus[i], path));
      GpuSpec gpu;
      if (gpus[i]["model"]) {
        // The model's fields, overridden by the GPU's own.
        GPUOP_ASSIGN_OR_RETURN(const std::string model,
                               ReadString(gpus[i]["model"], ChildPath(path, "model")));
        const YAML::Node models = root["models"];
        if (!models || !models[model]) {
          return FieldError(ChildPath(path, "model"), "no such entry in models");
        }
        GPUOP_RETURN_IF_ERROR(RequireMap(models[model], ChildPath("models", model)));
        YAML::Node merged = YAML::Clone(models[model]);
        for (const auto& entry : gpus[i]) merged[entry.first.Scalar()] = entry.second;
        absl::StrAppend(&path, " (model ", model, ")");
        GPUOP_RETURN_IF_ERROR(ReadGpu(merged, path, i, seed, gpu));
      } else {
        GPUOP_RETURN_IF_ERROR(ReadGpu(gpus[i], path, i, seed, gpu));
      }
      scenario.gpus.push_back(std::move(gpu));
    }
  }
  if (root["topology"]) {
    GPUOP_ASSIGN_OR_RETURN(scenario.topology, ReadTopology(root["topology"]));
  }
  if (root["timeline"]) {
    GPUOP_ASSIGN_OR_RETURN(scenario.timeline, ReadTimeline(root["timeline"]));
  }
  GPUOP_RETURN_IF_ERROR(Validate(scenario));
  return scenario;
}

}  // namespace

absl::StatusOr<ProcessSpec> ReadProcess(const YAML::Node& node, absl::string_view path) {
  GPUOP_RETURN_IF_ERROR(
      CheckKeys(node, path, {"pid", "used_mib", "gpu_instance", "compute_instance"}));
  ProcessSpec process;
  if (!node["pid"]) return FieldError(ChildPath(path, "pid"), "required");
  GPUOP_ASSIGN_OR_RETURN(process.pid, ReadUint(node["pid"], ChildPath(path, "pid")));
  if (node["used_mib"]) {
    GPUOP_ASSIGN_OR_RETURN(process.used_mib,
                           ReadUint(node["used_mib"], ChildPath(path, "used_mib"), 1 << 30));
  }
  if (node["gpu_instance"].IsDefined() != node["compute_instance"].IsDefined()) {
    return FieldError(path, "gpu_instance and compute_instance go together");
  }
  if (node["gpu_instance"]) {
    GPUOP_ASSIGN_OR_RETURN(process.gpu_instance,
                           ReadUint(node["gpu_instance"], ChildPath(path, "gpu_instance"), 1023));
    GPUOP_ASSIGN_OR_RETURN(
        process.compute_instance,
        ReadUint(node["compute_instance"], ChildPath(path, "compute_instance"), 1023));
  }
  return process;
}

absl::StatusOr<Scenario> ParseScenario(absl::string_view yaml, absl::string_view origin,
                                       absl::string_view node_seed) {
  try {
    const YAML::Node root = YAML::Load(std::string(yaml));
    if (!root.IsMap()) return absl::InvalidArgumentError("expected a YAML map at the top level");
    return Parse(root, origin, node_seed);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("invalid YAML: ", e.what()));
  }
}

}  // namespace gpuop::fakenvml
