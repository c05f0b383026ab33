#ifndef GPUOP_AGENT_POWER_LIMIT_RECORD_H_
#define GPUOP_AGENT_POWER_LIMIT_RECORD_H_

// Where the power manager writes down the limits it lowered, so that what it found is given back
// exactly, whoever gives it back: the manager itself, a restarted agent, or the uninstall's
// `gpuop-agent power --restore`. A limit lasts until the driver unloads, and so does the record
// on the node (/var/lib/gpuop survives both the agent's restarts and the driver's; a GPU whose
// limit no longer is the lowered one is dropped from it on first sight).

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace gpuop::agent::power {

struct RecordedLimit {
  double original_watts = 0;  // the limit found, to give back
  double lowered_watts = 0;   // the limit set

  friend bool operator==(const RecordedLimit&, const RecordedLimit&) = default;
};

// By GPU UUID.
using LimitMap = std::map<std::string, RecordedLimit>;

class LimitRecord {
 public:
  virtual ~LimitRecord() = default;
  // Everything recorded; empty when nothing is. An unreadable or malformed record is an error
  // (never taken as empty: its limits would be lost).
  [[nodiscard]] virtual absl::StatusOr<LimitMap> Load() = 0;
  // Replaces the record with `limits`, all or nothing.
  [[nodiscard]] virtual absl::Status Save(const LimitMap& limits) = 0;
  // Sets the entry of `uuid` (removes it when nullopt), leaving the others as they are, under
  // the record's lock: managers of several accelerator families share one record.
  [[nodiscard]] absl::Status Update(const std::string& uuid, std::optional<RecordedLimit> limit);

 private:
  absl::Mutex update_mu_;
};

// The record as a JSON file:
//   {"version": 1, "gpus": {"GPU-…": {"originalWatts": 700, "loweredWatts": 280}}}
// written atomically (common::WriteFileAtomically); an empty map removes the file.
class FileLimitRecord : public LimitRecord {
 public:
  static constexpr absl::string_view kDefaultPath = "/var/lib/gpuop/power-limits.json";
  explicit FileLimitRecord(std::filesystem::path path) : path_(std::move(path)) {}
  absl::StatusOr<LimitMap> Load() override;
  absl::Status Save(const LimitMap& limits) override;

 private:
  const std::filesystem::path path_;
};

// Parses the file's contents; InvalidArgument naming `source` and the field. Never throws.
[[nodiscard]] absl::StatusOr<LimitMap> ParseLimitRecord(absl::string_view json,
                                                        absl::string_view source);
std::string FormatLimitRecord(const LimitMap& limits);

// A record kept in memory only (tests, and a manager given no file).
class MemoryLimitRecord : public LimitRecord {
 public:
  absl::StatusOr<LimitMap> Load() override;
  absl::Status Save(const LimitMap& limits) override;

 private:
  absl::Mutex mu_;
  LimitMap limits_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpuop::agent::power

#endif  // GPUOP_AGENT_POWER_LIMIT_RECORD_H_
