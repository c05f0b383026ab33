#include "agent/validate/validator.h"

#include <cctype>
#include <cstdio>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/files.h"

namespace gpuop::agent {

namespace {

// "device-plugin" -> "DevicePlugin".
std::string Camel(const std::string& name) {
  std::string out;
  for (absl::string_view part : absl::StrSplit(name, '-', absl::SkipEmpty())) {
    std::string word(part);
    word[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(word[0])));
    out += word;
  }
  return out;
}

std::filesystem::path ReadyFile(const std::filesystem::path& dir, const std::string& check) {
  return dir / (check + "-ready");
}

}  // namespace

bool ValidationState::passed() const {
  for (const auto& c : checks) {
    if (c.phase != CheckState::Phase::kPassed) return false;
  }
  return true;
}

kube::Condition ValidationCondition(const ValidationState& state) {
  kube::Condition c{.type = kGpuValidatedCondition};
  std::vector<std::string> proved;
  for (const auto& check : state.checks) {
    switch (check.phase) {
      case CheckState::Phase::kPassed:
        proved.push_back(absl::StrCat(check.name, ": ", check.detail));
        break;
      case CheckState::Phase::kFailing:
        c.status = "False";
        c.reason = Camel(check.name) + "CheckFailed";
        c.message =
            absl::StrCat(check.name, " check failed (attempt ", check.attempts, ", ",
                         check.next_attempt == absl::InfiniteFuture()
                             ? std::string("gave up")
                             : absl::StrCat("next at ", kube::FormatTimestamp(check.next_attempt)),
                         "): ", check.detail);
        return c;
      case CheckState::Phase::kPending:
        c.status = "Unknown";
        c.reason = "Validating";
        c.message = proved.empty() ? absl::StrCat("running the ", check.name, " check")
                                   : absl::StrCat(absl::StrJoin(proved, "; "), "; running the ",
                                                  check.name, " check");
        return c;
    }
  }
  c.status = "True";
  c.reason = "Validated";
  c.message = absl::StrJoin(proved, "; ");
  return c;
}

Validator::Validator(std::vector<ValidationCheck> checks, ValidatorOptions options,
                     std::function<void(const ValidationState&)> on_update)
    : checks_(std::move(checks)), options_(std::move(options)), on_update_(std::move(on_update)) {
  for (const auto& check : checks_) state_.checks.push_back({.name = check.name});
}

void Validator::Publish(const CheckState& check) {
  if (!options_.status_dir.empty()) {
    const std::filesystem::path ready = ReadyFile(options_.status_dir, check.name);
    if (check.phase == CheckState::Phase::kPassed) {
      if (absl::Status s = common::WriteFileAtomically(ready, check.detail + "\n"); !s.ok()) {
        std::fprintf(stderr, "validate: %s\n", s.ToString().c_str());
      }
    } else {
      std::error_code ignored;
      std::filesystem::remove(ready, ignored);
    }
  }
  if (on_update_) on_update_(state_);
}

absl::Status Validator::Run(std::stop_token stop) {
  const common::Clock& clock = *options_.clock;
  const absl::Time deadline = options_.timeout == absl::InfiniteDuration()
                                  ? absl::InfiniteFuture()
                                  : clock.Now() + options_.timeout;
  for (auto& check : state_.checks) {
    check = CheckState{.name = check.name};
    Publish(check);
  }
  for (size_t i = 0; i < checks_.size(); ++i) {
    CheckState& state = state_.checks[i];
    while (true) {
      if (stop.stop_requested()) return absl::CancelledError("validation stopped");
      ++state.attempts;
      absl::StatusOr<std::string> result = checks_[i].run();
      if (result.ok()) {
        state.phase = CheckState::Phase::kPassed;
        state.detail = *std::move(result);
        Publish(state);
        break;
      }
      state.phase = CheckState::Phase::kFailing;
      state.detail = std::string(result.status().message());
      state.next_attempt =
          clock.Now() + kube::BackoffDelay(options_.retry, state.attempts - 1, random_);
      if (state.next_attempt >= deadline) {
        state.next_attempt = absl::InfiniteFuture();
        Publish(state);
        return absl::DeadlineExceededError(
            absl::StrCat("the ", state.name, " check did not pass within ",
                         absl::FormatDuration(options_.timeout), " (attempts: ", state.attempts,
                         "): ", state.detail));
      }
      Publish(state);
      clock.SleepFor(state.next_attempt - clock.Now(), stop);
    }
  }
  return absl::OkStatus();
}

}  // namespace gpuop::agent
