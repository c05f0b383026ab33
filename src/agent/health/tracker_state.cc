// HealthTracker::SaveState / LoadState: the conditions that wait for an action, kept in a node
// file so that a restarted agent does not forget a GPU that still needs a reset or a reboot.
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agent/health/tracker.h"

namespace gpuop::agent {
namespace {

using nlohmann::json;

absl::Status Bad(const std::string& where, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("health state: ", where, ": ", what));
}

absl::Status String(const json& j, const char* key, const std::string& where, std::string& out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return Bad(absl::StrCat(where, ".", key), "not a string");
  out = it->get<std::string>();
  return absl::OkStatus();
}

absl::Status Number(const json& j, const char* key, const std::string& where, int64_t& out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) {
    return Bad(absl::StrCat(where, ".", key), "not an integer");
  }
  out = it->get<int64_t>();
  return absl::OkStatus();
}

}  // namespace

nlohmann::json HealthTracker::SaveState() const {
  absl::MutexLock lock(&mu_);
  auto save = [](const Condition& c) {
    return json{{"code", c.code},
                {"reason", c.reason},
                {"since", absl::ToUnixMicros(c.since)},
                {"xid", c.xid},
                {"action", c.action.has_value() ? XidActionName(*c.action) : ""},
                {"bootId", c.boot_id}};
  };
  json gpus = json::object();
  for (const auto& [uuid, gpu] : gpus_) {
    json entry = json::object();
    if (gpu.event.has_value()) entry["event"] = save(*gpu.event);
    for (const auto& [id, c] : gpu.instances) entry["instances"][std::to_string(id)] = save(c);
    if (!entry.empty()) gpus[uuid] = std::move(entry);
  }
  return json{{"bootId", boot_id_}, {"gpus", std::move(gpus)}};
}

absl::Status HealthTracker::LoadState(const nlohmann::json& state) {
  auto load = [](const json& j, const std::string& where, Condition& c) -> absl::Status {
    if (!j.is_object()) return Bad(where, "not an object");
    if (auto s = String(j, "code", where, c.code); !s.ok()) return s;
    if (auto s = String(j, "reason", where, c.reason); !s.ok()) return s;
    if (auto s = String(j, "bootId", where, c.boot_id); !s.ok()) return s;
    int64_t since = 0, xid = 0;
    if (auto s = Number(j, "since", where, since); !s.ok()) return s;
    if (auto s = Number(j, "xid", where, xid); !s.ok()) return s;
    c.since = absl::FromUnixMicros(since);
    c.xid = static_cast<uint64_t>(xid < 0 ? 0 : xid);
    std::string action;
    if (auto s = String(j, "action", where, action); !s.ok()) return s;
    c.action = ParseXidAction(action);
    if (!c.action.has_value() || !MarksUnhealthy(*c.action)) {
      return Bad(where + ".action", "not ResetGpu, RebootNode or ContactSupport");
    }
    return absl::OkStatus();
  };
  if (!state.is_object()) return Bad("(top)", "not an object");
  auto gpus = state.find("gpus");
  if (gpus == state.end() || !gpus->is_object()) return Bad("gpus", "not an object");
  std::map<std::string, GpuHealth> loaded;
  for (const auto& [uuid, entry] : gpus->items()) {
    const std::string where = absl::StrCat("gpus.", uuid);
    if (!entry.is_object()) return Bad(where, "not an object");
    GpuHealth& gpu = loaded[uuid];
    if (auto e = entry.find("event"); e != entry.end()) {
      Condition c;
      if (auto s = load(*e, where + ".event", c); !s.ok()) return s;
      gpu.event = std::move(c);
    }
    if (auto inst = entry.find("instances"); inst != entry.end()) {
      if (!inst->is_object()) return Bad(where + ".instances", "not an object");
      for (const auto& [key, value] : inst->items()) {
        unsigned int id = 0;
        if (!absl::SimpleAtoi(key, &id)) return Bad(where + ".instances." + key, "not an id");
        Condition c;
        if (auto s = load(value, where + ".instances." + key, c); !s.ok()) return s;
        gpu.instances[id] = std::move(c);
      }
    }
  }
  absl::MutexLock lock(&mu_);
  for (auto& [uuid, gpu] : loaded) {
    GpuHealth& into = gpus_[uuid];
    if (gpu.event.has_value()) Raise(into.event, *std::move(gpu.event));
    for (auto& [id, c] : gpu.instances) into.instances.try_emplace(id, std::move(c));
  }
  return absl::OkStatus();
}

}  // namespace gpuop::agent
