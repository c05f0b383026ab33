#include "agent/mig/client_pause.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"

namespace gpuop::agent::mig {
namespace {

std::optional<std::string> Lookup(const std::map<std::string, std::string>& map,
                                  const std::string& key) {
  const auto it = map.find(key);
  return it == map.end() ? std::nullopt : std::optional<std::string>(it->second);
}

// The record on the node; nullopt when there is none or it cannot be read.
std::optional<PauseRecord> RecordOf(const NodeMeta& meta) {
  const std::optional<std::string> text = Lookup(meta.annotations, kPauseRecordAnnotation);
  if (!text.has_value()) return std::nullopt;
  absl::StatusOr<PauseRecord> record = DecodePauseRecord(*text);
  if (!record.ok()) return std::nullopt;
  return *std::move(record);
}

}  // namespace

std::vector<PausedComponent> DefaultPausedComponents() {
  std::vector<PausedComponent> components;
  for (const char* component : {"cdi", "labels", "device-plugin", "health", "exporter", "validator",
                                "power-manager", "mps-daemon"}) {
    components.push_back(
        {.label = absl::StrCat("gpuop.io/deploy.", component),
         .pod_selector = absl::StrCat(
             "app.kubernetes.io/part-of=gpuop,app.kubernetes.io/component=", component)});
  }
  // NVIDIA's GPU operator labels its operands so, and its DaemonSets' pods carry these app labels.
  const std::pair<const char*, const char*> nvidia[] = {
      {"device-plugin", "app=nvidia-device-plugin-daemonset"},
      {"gpu-feature-discovery", "app=gpu-feature-discovery"},
      {"dcgm-exporter", "app=nvidia-dcgm-exporter"},
      {"dcgm", "app=nvidia-dcgm"},
      {"nvsm", ""}};
  for (const auto& [component, selector] : nvidia) {
    components.push_back({.label = absl::StrCat("nvidia.com/gpu.deploy.", component),
                          .pod_selector = selector,
                          .only_when_present = true});
  }
  return components;
}

std::string EncodePauseRecord(const PauseRecord& record) {
  nlohmann::json object = nlohmann::json::object();
  for (const auto& [label, value] : record) {
    object[label] = value.has_value() ? nlohmann::json(*value) : nlohmann::json(nullptr);
  }
  return object.dump();
}

absl::StatusOr<PauseRecord> DecodePauseRecord(absl::string_view text) {
  const nlohmann::json object =
      nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (!object.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("annotation ", kPauseRecordAnnotation, ": not a JSON object"));
  }
  PauseRecord record;
  for (const auto& [label, value] : object.items()) {
    if (value.is_string()) {
      record[label] = value.get<std::string>();
    } else if (value.is_null()) {
      record[label] = std::nullopt;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("annotation ", kPauseRecordAnnotation, ": ",
                                                     label, ": must be a string or null"));
    }
  }
  return record;
}

bool IsPaused(const NodeMeta& meta, const std::vector<PausedComponent>& components) {
  if (meta.annotations.contains(kPauseRecordAnnotation)) return true;
  for (const PausedComponent& c : components) {
    if (Lookup(meta.labels, c.label) == kPausedValue) return true;
  }
  return false;
}

NodeWrite PauseWrite(const NodeMeta& meta, const std::vector<PausedComponent>& components,
                     const std::string& fallback) {
  const std::optional<PauseRecord> existing = RecordOf(meta);
  PauseRecord record = existing.value_or(PauseRecord{});
  NodeWrite write;
  for (const PausedComponent& c : components) {
    const std::optional<std::string> value = Lookup(meta.labels, c.label);
    // Another operator's client without a label, or switched off, has no pod here (mig-parted
    // also leaves "false" as it is).
    if (c.only_when_present && (!value.has_value() || value == "false") &&
        !record.contains(c.label)) {
      continue;
    }
    if (!record.contains(c.label)) {
      record[c.label] = value == kPausedValue ? std::optional<std::string>(fallback) : value;
    }
    if (value != kPausedValue) write.labels[c.label] = kPausedValue;
  }
  if (!existing.has_value() || *existing != record) {
    write.annotations[kPauseRecordAnnotation] = EncodePauseRecord(record);
  }
  return write;
}

NodeWrite RestoreWrite(const NodeMeta& meta, const std::vector<PausedComponent>& components,
                       const std::string& fallback) {
  PauseRecord record = RecordOf(meta).value_or(PauseRecord{});
  for (const PausedComponent& c : components) {
    if (!record.contains(c.label) && !c.only_when_present) record[c.label] = fallback;
  }
  NodeWrite write;
  for (const auto& [label, value] : record) {
    if (Lookup(meta.labels, label) == kPausedValue) write.labels[label] = value;
  }
  if (meta.annotations.contains(kPauseRecordAnnotation)) {
    write.annotations[kPauseRecordAnnotation] = std::nullopt;
  }
  return write;
}

void ApplyWrite(const NodeWrite& write, NodeMeta& meta) {
  auto apply = [](const MetaChanges& changes, std::map<std::string, std::string>& into) {
    for (const auto& [key, value] : changes) {
      if (value.has_value()) {
        into[key] = *value;
      } else {
        into.erase(key);
      }
    }
  };
  apply(write.labels, meta.labels);
  apply(write.annotations, meta.annotations);
}

}  // namespace gpuop::agent::mig
