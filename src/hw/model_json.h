#ifndef GPUOP_HW_MODEL_JSON_H_
#define GPUOP_HW_MODEL_JSON_H_

#include <nlohmann/json.hpp>

#include "hw/model.h"

namespace gpuop::hw {

// JSON forms of the model, for `gpuop-agent discover --output json` and status reports.
// Empty optional fields are omitted; keys are lowerCamelCase like Kubernetes objects.
nlohmann::json ToJson(const Gpu& gpu);
nlohmann::json ToJson(const Inventory& inventory);
nlohmann::json ToJson(const GpuSample& sample);
nlohmann::json ToJson(const Sample& sample);
nlohmann::json ToJson(const HardwareEvent& event);

}  // namespace gpuop::hw

#endif  // GPUOP_HW_MODEL_JSON_H_
