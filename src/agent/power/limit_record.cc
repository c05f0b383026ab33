#include "agent/power/limit_record.h"

#include <cmath>
#include <system_error>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "common/files.h"
#include "common/json_access.h"

namespace gpuop::agent::power {
namespace {

// A limit read back must be a plausible number of watts.
bool Watts(const nlohmann::json& v, double& out) {
  if (!v.is_number()) return false;
  out = v.get<double>();
  return std::isfinite(out) && out > 0 && out < 100000;
}

}  // namespace

absl::StatusOr<LimitMap> ParseLimitRecord(absl::string_view json, absl::string_view source) {
  absl::StatusOr<nlohmann::json> doc = common::ParseJson(json, source);
  if (!doc.ok()) return doc.status();
  auto error = [&](absl::string_view field, absl::string_view problem) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", field, ": ", problem));
  };
  if (!doc->is_object()) return error("(document)", "expected an object");
  if (common::JsonInt(*doc, "version", -1) != 1) return error("version", "expected 1");
  const nlohmann::json& gpus = common::JsonField(*doc, "gpus");
  if (!gpus.is_object()) return error("gpus", "expected an object of GPU UUIDs");
  LimitMap limits;
  for (const auto& [uuid, entry] : gpus.items()) {
    const std::string field = absl::StrCat("gpus.", uuid);
    RecordedLimit limit;
    if (!entry.is_object() ||
        !Watts(common::JsonField(entry, "originalWatts"), limit.original_watts)) {
      return error(field + ".originalWatts", "expected a number of watts");
    }
    if (!Watts(common::JsonField(entry, "loweredWatts"), limit.lowered_watts)) {
      return error(field + ".loweredWatts", "expected a number of watts");
    }
    limits.emplace(uuid, limit);
  }
  return limits;
}

std::string FormatLimitRecord(const LimitMap& limits) {
  nlohmann::json gpus = nlohmann::json::object();
  for (const auto& [uuid, limit] : limits) {
    gpus[uuid] = {{"originalWatts", limit.original_watts}, {"loweredWatts", limit.lowered_watts}};
  }
  return nlohmann::json{{"version", 1}, {"gpus", std::move(gpus)}}.dump(2) + "\n";
}

absl::Status LimitRecord::Update(const std::string& uuid, std::optional<RecordedLimit> limit) {
  absl::MutexLock lock(&update_mu_);
  absl::StatusOr<LimitMap> limits = Load();
  if (!limits.ok()) return limits.status();
  if (limit.has_value()) {
    (*limits)[uuid] = *limit;
  } else if (limits->erase(uuid) == 0) {
    return absl::OkStatus();
  }
  return Save(*limits);
}

absl::StatusOr<LimitMap> FileLimitRecord::Load() {
  absl::StatusOr<std::optional<std::string>> text = common::ReadFileIfExists(path_);
  if (!text.ok()) return text.status();
  if (!text->has_value()) return LimitMap{};
  return ParseLimitRecord(**text, path_.string());
}

absl::Status FileLimitRecord::Save(const LimitMap& limits) {
  if (limits.empty()) {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
    if (ec) return absl::InternalError(absl::StrCat("remove ", path_.string(), ": ", ec.message()));
    return absl::OkStatus();
  }
  return common::WriteFileAtomically(path_, FormatLimitRecord(limits));
}

absl::StatusOr<LimitMap> MemoryLimitRecord::Load() {
  absl::MutexLock lock(&mu_);
  return limits_;
}

absl::Status MemoryLimitRecord::Save(const LimitMap& limits) {
  absl::MutexLock lock(&mu_);
  limits_ = limits;
  return absl::OkStatus();
}

}  // namespace gpuop::agent::power
