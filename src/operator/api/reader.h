#ifndef GPUOP_OPERATOR_API_READER_H_
#define GPUOP_OPERATOR_API_READER_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace gpuop::op {

// Reads the fields of one JSON object of a custom resource, leaving the caller's default in place
// when a field is absent and failing with the field's full path ("spec.upgrade.maxParallel: must
// be an integer from 0 to ...") when it has the wrong type or range.
class Reader {
 public:
  Reader(const nlohmann::json& object, std::string path)
      : object_(object), path_(std::move(path)) {}

  // The object under `key` (a null reader when absent).
  Reader Child(const char* key) const;
  // The value under `key` (null when absent), read as a whole.
  const nlohmann::json& Get(const char* key) const;
  std::string Path(absl::string_view key) const;
  absl::Status Error(absl::string_view key, absl::string_view problem) const;

  absl::Status String(const char* key, std::string& out) const;
  absl::Status Bool(const char* key, bool& out) const;
  absl::Status Int(const char* key, int64_t& out, int64_t min, int64_t max) const;
  absl::Status Duration(const char* key, absl::Duration& out) const;
  absl::Status StringList(const char* key, std::vector<std::string>& out) const;
  absl::Status IntList(const char* key, std::vector<int64_t>& out, int64_t min, int64_t max) const;
  absl::Status StringMap(const char* key, std::map<std::string, std::string>& out) const;

 private:
  const nlohmann::json& Lookup(const char* key) const;

  const nlohmann::json& object_;
  std::string path_;
};

// While one is alive, every field a Reader on this thread looks up (present or not) is recorded
// by its path, list indices dropped ("spec.driver.env.name"). The test that walks every CRD
// field uses it to find fields no parser reads; the operator never creates one.
class ScopedFieldLog {
 public:
  ScopedFieldLog();
  ~ScopedFieldLog();
  ScopedFieldLog(const ScopedFieldLog&) = delete;
  ScopedFieldLog& operator=(const ScopedFieldLog&) = delete;

  const std::set<std::string>& paths() const { return paths_; }
  // Called by Reader.
  static void Record(const std::string& path);

 private:
  ScopedFieldLog* previous_;
  std::set<std::string> paths_;
};

}  // namespace gpuop::op

#endif  // GPUOP_OPERATOR_API_READER_H_
