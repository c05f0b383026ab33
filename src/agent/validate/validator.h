#ifndef GPUOP_AGENT_VALIDATE_VALIDATOR_H_
#define GPUOP_AGENT_VALIDATE_VALIDATOR_H_

#include <filesystem>
#include <functional>
#include <stop_token>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "agent/validate/checks.h"
#include "common/clock.h"
#include "kube/transport/backoff.h"
#include "kube/types/object_meta.h"

namespace gpuop::agent {

struct CheckState {
  enum class Phase { kPending, kFailing, kPassed };
  std::string name;
  Phase phase = Phase::kPending;
  std::string detail;  // what it proved, or why it failed last
  int attempts = 0;
  absl::Time next_attempt;  // set while failing
};

struct ValidationState {
  std::vector<CheckState> checks;
  bool passed() const;
};

// The Node condition for a validation state:
//   GPUValidated=True,    reason Validated, message listing what each check proved
//   GPUValidated=False,   reason <Check>CheckFailed (DriverCheckFailed, CudaCheckFailed,
//                         DevicePluginCheckFailed), message with the error, attempts, next try
//   GPUValidated=Unknown, reason Validating, while checks have not run yet
// last_transition_time is left unset.
inline constexpr char kGpuValidatedCondition[] = "GPUValidated";
kube::Condition ValidationCondition(const ValidationState& state);

struct ValidatorOptions {
  // Delay between attempts of a failing check.
  kube::BackoffPolicy retry = {.base = absl::Seconds(5), .cap = absl::Minutes(5)};
  // The run gives up after this long; InfiniteDuration: never.
  absl::Duration timeout = absl::Minutes(30);
  // "<check>-ready" files here say a check passed (their content is what it proved), for init
  // containers that wait on them; removed when the check has not passed. Empty: no files.
  std::filesystem::path status_dir = "/run/gpuop/validations";
  const common::Clock* clock = &common::Clock::Real();
};

// Runs checks in order; each must pass before the next runs. A failing check is retried with
// exponential backoff and jitter until it passes or the run times out. `on_update` sees the
// state after every attempt (to publish it).
class Validator {
 public:
  Validator(std::vector<ValidationCheck> checks, ValidatorOptions options,
            std::function<void(const ValidationState&)> on_update);

  // OK when every check passed; DeadlineExceeded naming the check and its last error after the
  // timeout; Cancelled when `stop` is requested. Stale ready files go first, so waiters never
  // proceed on an earlier run's results.
  [[nodiscard]] absl::Status Run(std::stop_token stop);

  const ValidationState& state() const { return state_; }

 private:
  void Publish(const CheckState& check);

  const std::vector<ValidationCheck> checks_;
  const ValidatorOptions options_;
  const std::function<void(const ValidationState&)> on_update_;
  ValidationState state_;
  absl::BitGen random_;
};

}  // namespace gpuop::agent

#endif  // GPUOP_AGENT_VALIDATE_VALIDATOR_H_
