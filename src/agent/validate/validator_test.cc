#include "agent/validate/validator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/files.h"
#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// A check that fails `failures` times, then passes.
ValidationCheck Flaky(const std::string& name, int failures, int* calls) {
  return {name, [=]() -> absl::StatusOr<std::string> {
            if ((*calls)++ < failures) {
              return absl::FailedPreconditionError(absl::StrCat(name, " not ready yet"));
            }
            return absl::StrCat(name, " works");
          }};
}

class ValidatorTest : public ::testing::Test {
 protected:
  ValidatorOptions Options(absl::Duration timeout = absl::Seconds(30)) {
    return {.retry = {.base = absl::Milliseconds(1), .cap = absl::Milliseconds(8)},
            .timeout = timeout,
            .status_dir = dir_.path() / "validations"};
  }
  bool Ready(const std::string& check) {
    return std::filesystem::exists(dir_.path() / "validations" / (check + "-ready"));
  }

  fakes::TempDir dir_;
};

TEST_F(ValidatorTest, RetriesAFailingCheckWithBackoffThenGoesOn) {
  int driver = 0, cuda = 0;
  std::vector<kube::Condition> seen;
  Validator validator({Flaky("driver", 3, &driver), Flaky("cuda", 0, &cuda)}, Options(),
                      [&](const ValidationState& s) { seen.push_back(ValidationCondition(s)); });
  ASSERT_TRUE(validator.Run({}).ok());
  EXPECT_EQ(driver, 4);
  EXPECT_EQ(cuda, 1);
  EXPECT_TRUE(validator.state().passed());
  EXPECT_EQ(validator.state().checks[0].attempts, 4);
  EXPECT_TRUE(Ready("driver"));
  EXPECT_TRUE(Ready("cuda"));
  EXPECT_EQ(*common::ReadFile(dir_.path() / "validations" / "cuda-ready"), "cuda works\n");

  // Every attempt was published: pending, three failures, pass, pass.
  ASSERT_GE(seen.size(), 5u);
  EXPECT_EQ(seen.front().status, "Unknown");
  EXPECT_EQ(seen[2].status, "False");
  EXPECT_EQ(seen[2].reason, "DriverCheckFailed");
  EXPECT_THAT(seen[2].message, HasSubstr("attempt 1, next at"));
  EXPECT_THAT(seen[2].message, HasSubstr("driver not ready yet"));
  EXPECT_EQ(seen.back().status, "True");
  EXPECT_EQ(seen.back().reason, "Validated");
  EXPECT_EQ(seen.back().message, "driver: driver works; cuda: cuda works");
}

TEST_F(ValidatorTest, TimeoutEndsInFailureNamingTheCheck) {
  int calls = 0, never = 0;
  Validator validator({Flaky("device-plugin", 1'000'000, &calls), Flaky("later", 0, &never)},
                      Options(absl::Milliseconds(50)), nullptr);
  const absl::Status s = validator.Run({});
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(s.message()),
              StartsWith("the device-plugin check did not pass within 50ms"));
  EXPECT_THAT(s.message(), HasSubstr("device-plugin not ready yet"));
  EXPECT_GT(calls, 1) << "retried before giving up";
  EXPECT_EQ(never, 0) << "later checks wait for earlier ones";
  const kube::Condition c = ValidationCondition(validator.state());
  EXPECT_EQ(c.status, "False");
  EXPECT_EQ(c.reason, "DevicePluginCheckFailed");
  EXPECT_THAT(c.message, HasSubstr("gave up"));
  EXPECT_FALSE(Ready("device-plugin"));
}

TEST_F(ValidatorTest, StaleReadyFilesGoBeforeTheRun) {
  ASSERT_TRUE(
      common::WriteFileAtomically(dir_.path() / "validations" / "driver-ready", "old\n").ok());
  bool driver_ready_during_check = true;
  ValidationCheck probe{"driver", [&]() -> absl::StatusOr<std::string> {
                          driver_ready_during_check = Ready("driver");
                          return absl::UnavailableError("NVML: driver not loaded");
                        }};
  Validator validator({probe}, Options(absl::Milliseconds(20)), nullptr);
  EXPECT_FALSE(validator.Run({}).ok());
  EXPECT_FALSE(driver_ready_during_check);
  EXPECT_FALSE(Ready("driver"));
}

TEST_F(ValidatorTest, StopCancels) {
  int calls = 0;
  std::stop_source stop;
  Validator validator({Flaky("driver", 1'000'000, &calls)},
                      {.retry = {.base = absl::Hours(1), .cap = absl::Hours(1)},
                       .timeout = absl::InfiniteDuration(),
                       .status_dir = ""},
                      nullptr);
  std::thread stopper([&] {
    absl::SleepFor(absl::Milliseconds(50));
    stop.request_stop();
  });
  EXPECT_EQ(validator.Run(stop.get_token()).code(), absl::StatusCode::kCancelled);
  stopper.join();
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace gpuop::agent
