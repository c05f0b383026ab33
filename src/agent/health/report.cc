#include "agent/health/report.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "kube/types/object_meta.h"

namespace gpuop::agent {

namespace {

using Json = nlohmann::json;

std::string ShortUuid(const std::string& uuid) {
  return uuid.size() > 16 ? absl::StrCat(uuid.substr(0, 16), "...") : uuid;
}

bool SameProblem(const std::optional<Unhealthy>& a, const std::optional<Unhealthy>& b) {
  if (a.has_value() != b.has_value()) return false;
  return !a.has_value() || (a->code == b->code && a->since == b->since);
}

// Identifies a device across reports.
std::string DeviceKey(const DeviceHealth& d) {
  // A GPU discovery could not describe has no UUID: its index names it.
  if (d.gpu_uuid.empty()) return absl::StrCat("index ", d.gpu_index);
  return d.gpu_instance_id.has_value() ? absl::StrCat(d.gpu_uuid, "/", *d.gpu_instance_id)
                                       : d.gpu_uuid;
}

absl::StatusOr<std::string> StringField(const Json& object, const char* field,
                                        const std::string& where) {
  auto it = object.find(field);
  if (it == object.end() || !it->is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat("health file: ", where, ".", field, " must be a string"));
  }
  return it->get<std::string>();
}

}  // namespace

std::string DeviceHealth::Describe() const {
  if (gpu_uuid.empty() && pci_bus_id.empty()) return absl::StrCat("GPU ", gpu_index);
  const std::string gpu =
      absl::StrCat("GPU ", gpu_index, " (", ShortUuid(gpu_uuid),
                   pci_bus_id.empty() || pci_bus_id == gpu_uuid ? "" : ", ", pci_bus_id, ")");
  if (!gpu_instance_id.has_value()) return gpu;
  return absl::StrCat("MIG instance ", *gpu_instance_id, " of ", gpu);
}

bool operator==(const DeviceHealth& a, const DeviceHealth& b) {
  return DeviceKey(a) == DeviceKey(b) && SameProblem(a.problem, b.problem) &&
         (!a.problem.has_value() || a.problem->reason == b.problem->reason);
}

int HealthReport::unhealthy_count() const {
  return static_cast<int>(std::count_if(
      devices.begin(), devices.end(), [](const DeviceHealth& d) { return d.problem.has_value(); }));
}

HealthReport BuildReport(const HealthTracker& tracker,
                         const std::vector<hw::Inventory>& inventories, absl::Time now) {
  HealthReport report{.time = now};
  for (size_t i = 0; i < inventories.size(); ++i) {
    const hw::Inventory& inventory = inventories[i];
    for (const hw::UnavailableGpu& gpu : inventory.unavailable) {
      std::optional<Unhealthy> problem = tracker.CheckUnavailable(i, gpu.index);
      if (!problem.has_value()) {
        problem = Unhealthy{.code = "GpuUnavailable",
                            .reason = absl::StrCat("not usable: ", gpu.reason),
                            .since = now};
      }
      report.devices.push_back(DeviceHealth{.gpu_index = gpu.index, .problem = std::move(problem)});
    }
    for (const auto& gpu : inventory.gpus) {
      const std::string& id = gpu.vendor == hw::Vendor::kAmd ? gpu.pci_bus_id : gpu.uuid;
      DeviceHealth whole{.gpu_index = gpu.index,
                         .gpu_uuid = id,
                         .pci_bus_id = gpu.pci_bus_id,
                         .product = gpu.product,
                         .problem = tracker.Check(id)};
      const bool gpu_healthy = !whole.problem.has_value();
      report.devices.push_back(std::move(whole));
      if (!gpu_healthy) continue;
      for (const auto& mig : gpu.mig_devices) {
        std::optional<Unhealthy> problem = tracker.Check(id, mig.gpu_instance_id);
        if (!problem.has_value()) continue;
        report.devices.push_back(DeviceHealth{.gpu_index = gpu.index,
                                              .gpu_uuid = id,
                                              .pci_bus_id = gpu.pci_bus_id,
                                              .product = gpu.product,
                                              .gpu_instance_id = mig.gpu_instance_id,
                                              .mig_uuid = mig.uuid,
                                              .problem = std::move(problem)});
      }
    }
  }
  return report;
}

std::vector<HealthTransition> Diff(const HealthReport& before, const HealthReport& after) {
  std::map<std::string, const DeviceHealth*> old;
  for (const auto& d : before.devices) old[DeviceKey(d)] = &d;
  std::vector<HealthTransition> out;
  std::set<std::string> seen;
  for (const auto& d : after.devices) {
    const std::string key = DeviceKey(d);
    seen.insert(key);
    auto it = old.find(key);
    const std::optional<Unhealthy> no_problem;
    const std::optional<Unhealthy>& was = it == old.end() ? no_problem : it->second->problem;
    if (SameProblem(was, d.problem)) continue;
    if (d.problem.has_value()) {
      out.push_back({.device = d, .recovered = false, .previous = was, .time = d.problem->since});
    } else if (was.has_value()) {
      out.push_back({.device = d, .recovered = true, .previous = was, .time = after.time});
    }
  }
  // A MIG instance that left the report recovered (or its GPU took over the verdict).
  for (const auto& d : before.devices) {
    if (!d.gpu_instance_id.has_value() || !d.problem.has_value()) continue;
    if (seen.contains(DeviceKey(d))) continue;
    DeviceHealth now = d;
    now.problem.reset();
    out.push_back(
        {.device = std::move(now), .recovered = true, .previous = d.problem, .time = after.time});
  }
  return out;
}

kube::Condition NodeCondition(const HealthReport& report) {
  kube::Condition c{.type = std::string(kGpuHealthyCondition)};
  int gpus = 0;
  std::set<std::string> codes;
  std::vector<std::string> problems;
  for (const auto& d : report.devices) {
    if (!d.gpu_instance_id.has_value()) ++gpus;
    if (!d.problem.has_value()) continue;
    codes.insert(d.problem->code);
    problems.push_back(absl::StrCat(
        d.Describe(), ": ", d.problem->reason, " since ", kube::FormatTimestamp(d.problem->since),
        d.problem->action.has_value() ? absl::StrCat(", needs ", XidActionName(*d.problem->action))
                                      : ""));
  }
  if (problems.empty()) {
    c.status = "True";
    c.reason = "AllGPUsHealthy";
    c.message = gpus == 1 ? "1 GPU healthy" : absl::StrCat(gpus, " GPUs healthy");
    return c;
  }
  c.status = "False";
  c.reason = codes.size() == 1 ? *codes.begin() : "MultipleProblems";
  c.message = absl::StrCat(problems.size(), " of ", gpus,
                           " GPUs unhealthy: ", absl::StrJoin(problems, "; "));
  return c;
}

std::optional<XidAction> RequiredAction(const HealthReport& report) {
  std::optional<XidAction> out;
  for (const auto& d : report.devices) {
    if (d.problem.has_value() && d.problem->action.has_value() &&
        (!out.has_value() || *d.problem->action > *out)) {
      out = d.problem->action;
    }
  }
  return out;
}

kube::Condition RecoveryActionCondition(const HealthReport& report) {
  kube::Condition c{.type = std::string(kGpuRecoveryActionCondition)};
  const std::optional<XidAction> action = RequiredAction(report);
  if (!action.has_value()) {
    c.status = "False";
    c.reason = "None";
    c.message = "no GPU waits for a recovery action";
    return c;
  }
  std::vector<std::string> devices;
  for (const auto& d : report.devices) {
    if (d.problem.has_value() && d.problem->action == action) {
      devices.push_back(absl::StrCat(d.Describe(), " (", d.problem->reason, ")"));
    }
  }
  c.status = "True";
  c.reason = XidActionName(*action);
  c.message = absl::StrCat(c.reason, " for ", absl::StrJoin(devices, "; "));
  return c;
}

std::string HealthFileJson(const HealthReport& report, absl::Time expires) {
  Json gpus = Json::array();
  std::map<std::string, size_t> by_uuid;
  for (const auto& d : report.devices) {
    // The file's verdicts are per UUID; a GPU discovery could not describe has none, and the
    // device plugin, which reads the file, does not serve it.
    if (d.gpu_uuid.empty()) continue;
    if (d.gpu_instance_id.has_value()) {
      auto it = by_uuid.find(d.gpu_uuid);
      if (it == by_uuid.end() || !d.problem.has_value()) continue;
      gpus[it->second]["migInstances"].push_back(
          {{"gpuInstanceId", *d.gpu_instance_id},
           {"uuid", d.mig_uuid},
           {"code", d.problem->code},
           {"reason", d.problem->reason},
           {"since", kube::FormatTimestamp(d.problem->since)}});
      continue;
    }
    Json gpu = {{"uuid", d.gpu_uuid},
                {"index", d.gpu_index},
                {"pciBusId", d.pci_bus_id},
                {"healthy", !d.problem.has_value()},
                {"migInstances", Json::array()}};
    if (d.problem.has_value()) {
      gpu["code"] = d.problem->code;
      gpu["reason"] = d.problem->reason;
      gpu["since"] = kube::FormatTimestamp(d.problem->since);
      if (d.problem->action.has_value()) gpu["action"] = XidActionName(*d.problem->action);
    }
    by_uuid[d.gpu_uuid] = gpus.size();
    gpus.push_back(std::move(gpu));
  }
  Json file = {{"updated", kube::FormatTimestamp(report.time)},
               {"expires", kube::FormatTimestamp(expires)},
               {"gpus", std::move(gpus)}};
  return file.dump(2) + "\n";
}

absl::StatusOr<std::map<std::string, Unhealthy>> ParseHealthFile(absl::string_view json,
                                                                 absl::Time now) {
  Json file = Json::parse(json.begin(), json.end(), nullptr, /*allow_exceptions=*/false);
  if (file.is_discarded() || !file.is_object()) {
    return absl::InvalidArgumentError("health file: not a JSON object");
  }
  GPUOP_ASSIGN_OR_RETURN(std::string expires_text, StringField(file, "expires", "$"));
  absl::StatusOr<absl::Time> expires = kube::ParseTimestamp(expires_text);
  if (!expires.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("health file: $.expires: ", expires.status().message()));
  }
  std::map<std::string, Unhealthy> out;
  if (*expires <= now) return out;
  auto gpus = file.find("gpus");
  if (gpus == file.end() || !gpus->is_array()) {
    return absl::InvalidArgumentError("health file: $.gpus must be an array");
  }
  for (size_t i = 0; i < gpus->size(); ++i) {
    const Json& gpu = (*gpus)[i];
    const std::string where = absl::StrCat("$.gpus[", i, "]");
    if (!gpu.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat("health file: ", where, " must be an object"));
    }
    GPUOP_ASSIGN_OR_RETURN(std::string uuid, StringField(gpu, "uuid", where));
    auto healthy = gpu.find("healthy");
    if (healthy == gpu.end() || !healthy->is_boolean()) {
      return absl::InvalidArgumentError(
          absl::StrCat("health file: ", where, ".healthy must be true or false"));
    }
    if (healthy->get<bool>()) continue;
    Unhealthy problem;
    GPUOP_ASSIGN_OR_RETURN(problem.code, StringField(gpu, "code", where));
    GPUOP_ASSIGN_OR_RETURN(problem.reason, StringField(gpu, "reason", where));
    GPUOP_ASSIGN_OR_RETURN(std::string since, StringField(gpu, "since", where));
    absl::StatusOr<absl::Time> at = kube::ParseTimestamp(since);
    if (!at.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("health file: ", where, ".since: ", at.status().message()));
    }
    problem.since = *at;
    if (auto action = gpu.find("action"); action != gpu.end()) {
      problem.action =
          action->is_string() ? ParseXidAction(action->get<std::string>()) : std::nullopt;
      if (!problem.action.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "health file: ", where,
            ".action must be Ignore, RestartApp, ResetGpu, RebootNode or ContactSupport"));
      }
    }
    out[uuid] = std::move(problem);
  }
  return out;
}

}  // namespace gpuop::agent
