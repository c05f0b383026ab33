#ifndef GPUOP_KUBE_TYPES_JSON_FIELDS_H_
#define GPUOP_KUBE_TYPES_JSON_FIELDS_H_

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace gpuop::kube {

// Reading fields from API objects without exceptions: a missing field or one of another type
// yields the fallback. (nlohmann's value() throws on a type mismatch.)

inline const nlohmann::json& Field(const nlohmann::json& object, const char* key) {
  static const nlohmann::json* const null = new nlohmann::json();
  if (!object.is_object()) return *null;
  auto it = object.find(key);
  return it == object.end() ? *null : *it;
}

inline std::string StringField(const nlohmann::json& object, const char* key,
                               const std::string& fallback = "") {
  const nlohmann::json& v = Field(object, key);
  return v.is_string() ? v.get<std::string>() : fallback;
}

inline int64_t IntField(const nlohmann::json& object, const char* key, int64_t fallback = 0) {
  const nlohmann::json& v = Field(object, key);
  return v.is_number_integer() ? v.get<int64_t>() : fallback;
}

inline bool BoolField(const nlohmann::json& object, const char* key, bool fallback = false) {
  const nlohmann::json& v = Field(object, key);
  return v.is_boolean() ? v.get<bool>() : fallback;
}

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_TYPES_JSON_FIELDS_H_
