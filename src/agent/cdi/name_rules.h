#ifndef GPUOP_AGENT_CDI_NAME_RULES_H_
#define GPUOP_AGENT_CDI_NAME_RULES_H_

// The character rules of CDI names, as the reference parser (pkg/parser) enforces them. Header
// only and standard library only: both the spec validator (validate.h) and the statically linked
// gpuop-container-runtime (inject/device_names.h) use them, each with its own error type.

#include <cstddef>
#include <string>
#include <string_view>

namespace gpuop::agent::cdi::name_rules {

inline constexpr size_t kMaxVendorLength = 253;  // a DNS subdomain
inline constexpr size_t kMaxClassLength = 63;

inline bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
inline bool IsAlphaNumeric(char c) { return IsLetter(c) || (c >= '0' && c <= '9'); }

// What breaks the vendor or class rule in non-empty `text` ("must start with a letter", ...),
// or "" when nothing does: a letter first, a letter or digit last, letters, digits, '_', '-'
// and '.' between, at most `max_length` characters.
inline std::string QualifierProblem(std::string_view text, size_t max_length) {
  if (!IsLetter(text.front())) return "must start with a letter";
  if (!IsAlphaNumeric(text.back())) return "must end with a letter or digit";
  for (char c : text) {
    if (!IsAlphaNumeric(c) && c != '_' && c != '-' && c != '.') {
      return "contains '" + std::string(1, c) +
             "'; only letters, digits, '_', '-' and '.' are allowed";
    }
  }
  if (text.size() > max_length) {
    return "is " + std::to_string(text.size()) + " characters long; the limit is " +
           std::to_string(max_length);
  }
  return "";
}

// The same for a device name (non-empty): a letter or digit first and last, and ':' allowed
// between as well, which makes MIG names such as "0:1" legal.
inline std::string DeviceNameProblem(std::string_view text) {
  if (!IsAlphaNumeric(text.front())) return "must start with a letter or digit";
  if (!IsAlphaNumeric(text.back())) return "must end with a letter or digit";
  for (char c : text) {
    if (!IsAlphaNumeric(c) && c != '_' && c != '-' && c != '.' && c != ':') {
      return "contains '" + std::string(1, c) +
             "'; only letters, digits, '_', '-', '.' and ':' are allowed";
    }
  }
  return "";
}

}  // namespace gpuop::agent::cdi::name_rules

#endif  // GPUOP_AGENT_CDI_NAME_RULES_H_
