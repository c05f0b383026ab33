#include "operator/nodes/inventory.h"

#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/json_access.h"
#include "common/status_macros.h"

namespace gpuop::op {
namespace {

using Json = nlohmann::json;

absl::Status Invalid(absl::string_view field, absl::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat(kGpuInventoryAnnotation, ": ", field, ": ", problem));
}

std::string Field(const std::string& where, const char* key) {
  return where.empty() ? std::string(key) : absl::StrCat(where, ".", key);
}

// Copies object[key] into out[key] when it is present and a string.
absl::Status CopyString(const Json& object, const char* key, const std::string& where, Json& out) {
  const Json& v = common::JsonField(object, key);
  if (v.is_null()) return absl::OkStatus();
  if (!v.is_string()) return Invalid(Field(where, key), "must be a string");
  out[key] = v;
  return absl::OkStatus();
}

// Copies object[key] into out[key] when it is present and an integer from 0 to `max`.
absl::Status CopyCount(const Json& object, const char* key, int64_t max, const std::string& where,
                       Json& out) {
  const Json& v = common::JsonField(object, key);
  if (v.is_null()) return absl::OkStatus();
  const int64_t n = common::JsonInt(object, key, -1);
  if (n < 0 || n > max) {
    return Invalid(Field(where, key), absl::StrCat("must be an integer from 0 to ", max));
  }
  out[key] = n;
  return absl::OkStatus();
}

absl::Status ReadMigDevices(const Json& gpu, const std::string& where, Json& out) {
  const Json& devices = common::JsonField(gpu, "migDevices");
  if (devices.is_null()) return absl::OkStatus();
  const std::string field = absl::StrCat(where, ".migDevices");
  if (!devices.is_array()) return Invalid(field, "must be a list of {profile, uuid}");
  if (devices.size() > kMaxInventoryMigDevices) {
    return Invalid(field, absl::StrCat("lists more than ", kMaxInventoryMigDevices, " devices"));
  }
  Json list = Json::array();
  for (size_t i = 0; i < devices.size(); ++i) {
    const std::string item = absl::StrCat(field, "[", i, "]");
    if (!devices[i].is_object()) return Invalid(item, "must be {profile, uuid}");
    Json device = Json::object();
    GPUOP_RETURN_IF_ERROR(CopyString(devices[i], "profile", item, device));
    GPUOP_RETURN_IF_ERROR(CopyString(devices[i], "uuid", item, device));
    list.push_back(std::move(device));
  }
  out["migDevices"] = std::move(list);
  return absl::OkStatus();
}

absl::StatusOr<Json> ReadGpu(const Json& g, const std::string& where) {
  if (!g.is_object()) return Invalid(where, "must be an object");
  Json gpu = Json::object();
  GPUOP_RETURN_IF_ERROR(CopyCount(g, "index", std::numeric_limits<int32_t>::max(), where, gpu));
  GPUOP_RETURN_IF_ERROR(CopyString(g, "uuid", where, gpu));
  GPUOP_RETURN_IF_ERROR(CopyString(g, "product", where, gpu));
  GPUOP_RETURN_IF_ERROR(CopyCount(g, "memoryMiB", std::numeric_limits<int64_t>::max(), where, gpu));
  GPUOP_RETURN_IF_ERROR(CopyString(g, "pciBusId", where, gpu));
  if (const Json& mig = common::JsonField(g, "migEnabled"); !mig.is_null()) {
    if (!mig.is_boolean()) return Invalid(absl::StrCat(where, ".migEnabled"), "must be a boolean");
    gpu["migEnabled"] = mig;
  }
  GPUOP_RETURN_IF_ERROR(ReadMigDevices(g, where, gpu));
  return gpu;
}

}  // namespace

absl::StatusOr<GpuInventory> ParseGpuInventory(absl::string_view annotation) {
  GPUOP_ASSIGN_OR_RETURN(const Json doc, common::ParseJson(annotation, kGpuInventoryAnnotation));
  if (!doc.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kGpuInventoryAnnotation, ": must be a JSON object"));
  }
  GpuInventory inventory;
  Json top = Json::object();
  GPUOP_RETURN_IF_ERROR(CopyString(doc, "driver", "", top));
  GPUOP_RETURN_IF_ERROR(CopyString(doc, "cuda", "", top));
  inventory.driver = common::JsonString(top, "driver");
  inventory.cuda = common::JsonString(top, "cuda");
  const Json& gpus = common::JsonField(doc, "gpus");
  if (gpus.is_null()) return inventory;
  if (!gpus.is_array()) return Invalid("gpus", "must be a list");
  if (gpus.size() > kMaxInventoryGpus) {
    return Invalid("gpus", absl::StrCat("lists more than ", kMaxInventoryGpus, " GPUs"));
  }
  for (size_t i = 0; i < gpus.size(); ++i) {
    GPUOP_ASSIGN_OR_RETURN(Json gpu, ReadGpu(gpus[i], absl::StrCat("gpus[", i, "]")));
    inventory.gpus.push_back(std::move(gpu));
  }
  return inventory;
}

}  // namespace gpuop::op
