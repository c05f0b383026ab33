#include "test/node/node_e2e_health_steps.h"

#include <algorithm>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "agent/podresources/pod_resources.h"
#include "test/cluster/node_config.h"
#include "test/e2e/operator_e2e_util.h"
#include "test/fakes/nvml/node_control.h"
#include "test/node/node_e2e_fixture.h"
#include "test/node/node_e2e_reports.h"
#include "test/node/node_e2e_util.h"

namespace gpuop::test {

using nlohmann::json;

void XidRemediationStep() {
  ASSERT_TRUE(AwaitAllocatable(absl::Minutes(2)).ok());
  absl::StatusOr<std::vector<json>> before = Pods(kNamespace);
  ASSERT_TRUE(before.ok()) << before.status();
  const json* old_driver = DriverPod(*before);
  ASSERT_NE(old_driver, nullptr);
  const std::string old_driver_name = (*old_driver)["metadata"].value("name", "");

  // What the hardware reports, through the SIMULATED driver's fake NVML on the node: every NVML
  // client there (the device plugin, the health monitor) follows this file.
  const std::filesystem::path control = Cluster().NodeView(
      absl::StrCat("/run/nvidia/driver/usr/lib/x86_64-linux-gnu/", fakenvml::kNodeControlFile));
  {
    std::ofstream out(control, std::ios::app);
    ASSERT_TRUE(out.good()) << "cannot append to " << control;
    out << "xid 3 13\n"   // a graphics engine exception: restart the application
        << "xid 5 48\n";  // a double-bit ECC error: the GPU needs a reset
  }

  // GPU 5 goes, GPU 3 stays: 7 allocatable, and the node says what it needs.
  bool saw_seven = false, saw_action = false, saw_status = false, saw_restart = false;
  std::string last_health;
  const absl::Status remediated = AwaitDone(
      "GPU 5 withdrawn, the driver restarted and the GPU back", absl::Minutes(4),
      [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<json> node = Get(absl::StrCat("/api/v1/nodes/", kNodeName));
        if (!node.ok()) return node.status();
        const std::string count = Allocatable(*node, "nvidia.com/gpu");
        const json health = ConditionOf(*node, "GPUHealthy");
        const json action = ConditionOf(*node, "GPURecoveryAction");
        last_health = health.value("message", "");
        // The kubelet's device manager holding seven GPUs healthy is GPU 5 withdrawn and GPU 3
        // kept (Node allocatable follows at the next status sync, every 10 s, which may fall
        // after the remediation already paused the plugin).
        if (absl::StatusOr<std::vector<agent::podresources::PodDevice>> healthy =
                agent::podresources::ListAllocatableDevices(
                    Cluster().node().var_lib_kubelet / "pod-resources" / "kubelet.sock",
                    absl::Seconds(5));
            healthy.ok() && std::count_if(healthy->begin(), healthy->end(), [](const auto& d) {
                              return d.resource == "nvidia.com/gpu";
                            }) == 7) {
          saw_seven = true;
        }
        if (action.value("status", "") == "True" && action.value("reason", "") == "ResetGpu") {
          saw_action = true;
          EXPECT_THAT(health.value("message", ""), ::testing::HasSubstr("XID 48"));
          EXPECT_THAT(health.value("message", ""), ::testing::Not(::testing::HasSubstr("XID 13")));
        }
        absl::StatusOr<json> gpunode =
            Get(absl::StrCat("/apis/gpuop.io/v1alpha1/gpunodes/", kNodeName));
        if (gpunode.ok() &&
            (*gpunode)["status"].value("health", json::object()).value("requiredAction", "") ==
                "ResetGpu") {
          saw_status = true;
        }
        absl::StatusOr<std::vector<json>> pods = Pods(kNamespace);
        if (!pods.ok()) return pods.status();
        const json* driver = DriverPod(*pods);
        if (driver != nullptr && (*driver)["metadata"].value("name", "") != old_driver_name) {
          saw_restart = true;
        }
        const std::string state = LabelOf(*node, "gpuop.io/remediation-state");
        if (saw_restart && count == "8" && health.value("status", "") == "True" &&
            state == "done" && !HasTaint(*node, "gpuop.io/remediation")) {
          return std::string();
        }
        return absl::StrCat("allocatable ", count, ", GPUHealthy ", health.value("status", ""),
                            ", GPURecoveryAction ", action.value("reason", ""), ", remediation ",
                            state, " ", AnnotationOf(*node, "gpuop.io/remediation-step"), " (",
                            AnnotationOf(*node, "gpuop.io/remediation-message"), ")",
                            saw_restart ? ", driver restarted" : "");
      });
  ASSERT_TRUE(remediated.ok()) << remediated << "\nlast GPUHealthy: " << last_health;
  EXPECT_TRUE(saw_seven) << "GPU 5 was never withdrawn (and GPU 3 kept)";
  EXPECT_TRUE(saw_action) << "GPURecoveryAction never said ResetGpu";
  EXPECT_TRUE(saw_status) << "the GPUNode never showed requiredAction ResetGpu";
  absl::StatusOr<json> node = Get(absl::StrCat("/api/v1/nodes/", kNodeName));
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(AnnotationOf(*node, "gpuop.io/remediation-action"), "ResetGpu");
  EXPECT_EQ(ConditionOf(*node, "GPURecoveryAction").value("status", ""), "False");
  EXPECT_FALSE(Cordoned(*node));
}

}  // namespace gpuop::test
