// Validation of the elector's configuration and callbacks.
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/fake_clock.h"
#include "kube/leaderelection/fake_lease_store.h"
#include "kube/leaderelection/leader_elector.h"

namespace gpuop::kube {
namespace {

using ::testing::HasSubstr;

constexpr char kNamespace[] = "gpuop-system";
constexpr char kName[] = "gpuop-operator";

void NoWork(std::stop_token) {}

struct ConfigCase {
  std::string name;
  void (*mutate)(LeaderElectorConfig&);
  std::string field;
};

void PrintTo(const ConfigCase& c, std::ostream* os) { *os << c.name; }

class LeaderElectorConfigTest : public ::testing::TestWithParam<ConfigCase> {};

TEST_P(LeaderElectorConfigTest, RejectsWithTheField) {
  common::FakeClock clock;
  LeaderElectorConfig config{
      .lease_namespace = kNamespace, .lease_name = kName, .identity = "a", .clock = &clock};
  ASSERT_TRUE(ValidateLeaderElectorConfig(config).ok());
  GetParam().mutate(config);
  FakeLeaseStore store;
  auto elector = LeaderElector::Create(store, config, {.on_started_leading = NoWork});
  EXPECT_EQ(elector.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(elector.status().message(), HasSubstr(GetParam().field));
}

INSTANTIATE_TEST_SUITE_P(
    Fields, LeaderElectorConfigTest,
    ::testing::Values(
        ConfigCase{"NoIdentity", [](LeaderElectorConfig& c) { c.identity.clear(); }, "identity"},
        ConfigCase{"NoName", [](LeaderElectorConfig& c) { c.lease_name.clear(); }, "lease_name"},
        ConfigCase{"NoNamespace", [](LeaderElectorConfig& c) { c.lease_namespace.clear(); },
                   "lease_namespace"},
        ConfigCase{"RenewDeadlineNotShorterThanLease",
                   [](LeaderElectorConfig& c) { c.renew_deadline = c.lease_duration; },
                   "renew_deadline"},
        ConfigCase{"RetryPeriodNotShorterThanRenewDeadline",
                   [](LeaderElectorConfig& c) { c.retry_period = c.renew_deadline; },
                   "retry_period"},
        ConfigCase{"ZeroRetryPeriod",
                   [](LeaderElectorConfig& c) { c.retry_period = absl::ZeroDuration(); },
                   "retry_period"},
        ConfigCase{"SubSecondLease",
                   [](LeaderElectorConfig& c) {
                     c.lease_duration = absl::Milliseconds(500);
                     c.renew_deadline = absl::Milliseconds(400);
                     c.retry_period = absl::Milliseconds(100);
                   },
                   "lease_duration"},
        ConfigCase{"NoClock", [](LeaderElectorConfig& c) { c.clock = nullptr; }, "clock"}),
    [](const ::testing::TestParamInfo<ConfigCase>& param) { return param.param.name; });

TEST(LeaderElectorCallbacksTest, RequiresOnStartedLeading) {
  FakeLeaseStore store;
  auto elector = LeaderElector::Create(
      store, {.lease_namespace = kNamespace, .lease_name = kName, .identity = "a"}, {});
  EXPECT_EQ(elector.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(elector.status().message(), HasSubstr("on_started_leading"));
}

}  // namespace
}  // namespace gpuop::kube
