#include "operator/nodes/driver_clients.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuop::op {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

TEST(DriverClientsTest, OnlyComponentsThatOpenTheDriverAreClients) {
  EXPECT_TRUE(IsDriverClient("device-plugin"));
  EXPECT_TRUE(IsDriverClient("validator"));
  EXPECT_TRUE(IsDriverClient("cdi"));
  EXPECT_FALSE(IsDriverClient("driver"));
  EXPECT_FALSE(IsDriverClient("runtime"));
  EXPECT_FALSE(IsDriverClient("discovery"));
}

TEST(DriverClientsTest, PausesWhatRunsAndLeavesOtherValuesAlone) {
  PolicySpec policy;  // mig-manager and power-manager are off by default
  const kube::Labels labels(
      std::map<std::string, std::string>{{"gpuop.io/deploy.device-plugin", "true"},
                                         {"gpuop.io/deploy.exporter", "paused-for-mig-change"},
                                         {"gpuop.io/deploy.health", "false"},
                                         {"gpuop.io/deploy.validator", "true"},
                                         {"gpuop.io/deploy.mig-manager", "true"},
                                         {"gpuop.io/deploy.driver", "true"},
                                         {"gpuop.io/deploy.runtime", "true"}});
  const DriverClients clients =
      DescribeDriverClients(labels, policy,
                            {{"gpuop-validator-x", "validator", "Running"},
                             {"gpuop-device-plugin-y", "device-plugin", "Pending"},
                             {"gpuop-driver-z", "driver", "Running"},
                             {"gpuop-labels-old", "labels", "Succeeded"}});
  EXPECT_THAT(clients.to_pause,
              ElementsAre("gpuop.io/deploy.device-plugin", "gpuop.io/deploy.validator"));
  EXPECT_THAT(clients.PauseLabels(),
              ElementsAre(Pair("gpuop.io/deploy.device-plugin", "paused-for-driver-upgrade"),
                          Pair("gpuop.io/deploy.validator", "paused-for-driver-upgrade")));
  EXPECT_THAT(clients.running, ElementsAre("gpuop-device-plugin-y", "gpuop-validator-x"));
  EXPECT_THAT(clients.paused, IsEmpty());
  EXPECT_FALSE(clients.Stopped());
  EXPECT_EQ(DriverClients::ComponentsOf(clients.to_pause), "device-plugin, validator");
}

TEST(DriverClientsTest, ResumesOnlyItsOwnPause) {
  PolicySpec policy;
  const kube::Labels labels(std::map<std::string, std::string>{
      {"gpuop.io/deploy.device-plugin", "paused-for-driver-upgrade"},
      {"gpuop.io/deploy.exporter", "paused-for-mig-change"},
      {"gpuop.io/deploy.cdi", "paused-for-driver-upgrade"}});
  const DriverClients clients = DescribeDriverClients(labels, policy, {});
  EXPECT_TRUE(clients.Stopped());
  EXPECT_THAT(clients.ResumeLabels(), ElementsAre(Pair("gpuop.io/deploy.cdi", "true"),
                                                  Pair("gpuop.io/deploy.device-plugin", "true")));
}

}  // namespace
}  // namespace gpuop::op
