// Act 3: an XID on a node remediated back to service.
#include <algorithm>
#include <iostream>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "test/e2e/operator_e2e_test.h"

namespace gpuop::test {

void OperatorE2eTest::RemediateAnXid() {
  // The node that runs a trainer pod, so the drain has something to move.
  std::string node;
  std::string trainer_pod;
  {
    absl::StatusOr<std::vector<Json>> trainers = TrainerPods();
    ASSERT_TRUE(trainers.ok()) << trainers.status();
    for (const Json& pod : *trainers) {
      if (PodRunningAndReady(pod)) {
        node = pod["spec"].value("nodeName", "");
        trainer_pod = Name(pod);
        break;
      }
    }
  }
  ASSERT_FALSE(node.empty()) << "no running trainer pod";
  absl::StatusOr<std::map<std::string, Json>> driver_pods = OperandPods("gpuop-driver-debian12");
  ASSERT_TRUE(driver_pods.ok()) << driver_pods.status();
  ASSERT_TRUE(driver_pods->contains(node));
  const std::string old_driver_pod = Name((*driver_pods)[node]);

  // The node's health monitor: a real agent process on the fake NVML (8 x H100). kwok runs no
  // probes, so the test does what the driver container's startup probe does on a real node: it
  // touches the driver's ready file once the driver pod is up (below).
  const std::filesystem::path control = work_dir_ / "nvml-control";
  const std::filesystem::path driver_ready = work_dir_ / ".driver-ctr-ready";
  ASSERT_TRUE(AppendLine(driver_ready, "").ok());
  absl::StatusOr<std::unique_ptr<ChildProcess>> agent = ChildProcess::Start(
      {GPUOP_AGENT_BINARY, "health", "--node-name", node, "--kubeconfig",
       ClusterEnvironment::Get().kubeconfig().string(), "--nvml-library", GPUOP_FAKE_NVML_LIBRARY,
       "--sysfs-root", (work_dir_ / "no-sysfs").string(), "--health-file",
       (work_dir_ / "gpu-health.json").string(), "--state-file",
       (work_dir_ / "health-state.json").string(), "--driver-ready-file", driver_ready.string(),
       "--sample-interval", "2"},
      {"GPUOP_FAKE_NVML_SCENARIO=h100-8x-nvswitch",
       absl::StrCat("GPUOP_FAKE_NVML_CONTROL=", control.string())},
      work_dir_ / "agent-health.log");
  ASSERT_TRUE(agent.ok()) << agent.status();
  agent_ = *std::move(agent);
  auto gpu_healthy = [&]() -> absl::StatusOr<std::string> {
    absl::StatusOr<Json> got = client_->Get(resources::kNodes, "", node);
    if (!got.ok()) return got.status();
    return ConditionStatus(*got, "GPUHealthy");
  };
  absl::Status healthy = AwaitDone(
      "GPUHealthy=True from the agent", absl::Minutes(1), [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<std::string> status = gpu_healthy();
        if (!status.ok()) return status.status();
        return *status == "True" ? "" : "GPUHealthy is '" + *status + "'";
      });
  ASSERT_TRUE(healthy.ok()) << healthy;

  // XID 48 (double-bit ECC) on GPU 3, once: the catalogue resets the GPU for it, so the GPU
  // stays unhealthy, however long, until the driver has been reloaded. The remediation restarts
  // the driver pod; the GPU stays unhealthy in Validate until the new driver reports loaded.
  ASSERT_TRUE(AppendLine(control, "xid 3 48").ok());
  std::optional<absl::Time> validate_seen;
  bool saw_unhealthy = false, saw_taint = false, saw_in_progress = false, saw_action = false;
  bool driver_loaded = false;
  std::vector<std::string> violations;
  const absl::Status remediated =
      AwaitDone("the node remediated", absl::Minutes(5), [&]() -> absl::StatusOr<std::string> {
        const absl::Time now = absl::Now();
        absl::StatusOr<Json> got = client_->Get(resources::kNodes, "", node);
        if (!got.ok()) return got.status();
        const std::string health = ConditionStatus(*got, "GPUHealthy");
        const std::string state = LabelOf(*got, kRemediationState);
        const std::string step = AnnotationOf(*got, kRemediationStep);
        const bool tainted = HasTaint(*got, kRemediationTaint);
        saw_unhealthy = saw_unhealthy || health == "False";
        saw_taint = saw_taint || tainted;
        saw_in_progress = saw_in_progress || state == "in-progress";
        saw_action =
            saw_action || (ConditionStatus(*got, "GPURecoveryAction") == "True" &&
                           AnnotationOf(*got, "gpuop.io/remediation-action") == "ResetGpu");
        if (step == "Validate" && health == "False" && !validate_seen.has_value()) {
          validate_seen = now;
        }
        // Waited in Validate for two samples with the new driver pod running: the new driver
        // has loaded (what its startup probe records).
        if (validate_seen.has_value() && !driver_loaded &&
            now - *validate_seen > absl::Seconds(4)) {
          absl::StatusOr<std::map<std::string, Json>> pods = OperandPods("gpuop-driver-debian12");
          if (pods.ok() && pods->contains(node) && Name((*pods)[node]) != old_driver_pod) {
            std::filesystem::last_write_time(driver_ready,
                                             std::filesystem::file_time_type::clock::now());
            driver_loaded = true;
          }
        }
        // While the GPU is unhealthy the node must not go back to service.
        if (saw_taint && health == "False" && (!tainted || state == "done")) {
          violations.push_back(absl::StrCat("state=", state, " step=", step, " tainted=", tainted,
                                            " with GPUHealthy=False"));
        }
        if (state == "done" && !tainted && health == "True" && driver_loaded) return "";
        return absl::StrCat("GPUHealthy=", health, " state=", state, " step=", step,
                            " tainted=", tainted);
      });
  ASSERT_TRUE(remediated.ok()) << remediated << "\nagent log:\n" << agent_->LogTail();
  EXPECT_TRUE(saw_unhealthy);
  EXPECT_TRUE(saw_taint);
  EXPECT_TRUE(saw_in_progress);
  EXPECT_TRUE(saw_action) << "GPURecoveryAction=True and the remediation ran ResetGpu";
  EXPECT_TRUE(validate_seen.has_value()) << "the GPU stayed unhealthy after the driver restart";
  EXPECT_THAT(violations, IsEmpty());

  // Its state, as kubectl shows it.
  absl::StatusOr<Json> got = client_->Get(resources::kNodes, "", node);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(LabelOf(*got, kRemediationState), "done");
  EXPECT_FALSE(HasAnnotation(*got, kRemediationStep));
  EXPECT_TRUE(HasAnnotation(*got, kRemediationSince));
  const std::vector<std::string> attempts =
      absl::StrSplit(AnnotationOf(*got, kRemediationAttempts), ',', absl::SkipEmpty());
  EXPECT_EQ(attempts.size(), 1u) << AnnotationOf(*got, kRemediationAttempts);
  EXPECT_FALSE(AnnotationOf(*got, kRemediationMessage).empty());
  EXPECT_FALSE(Cordoned(*got));
  // And as the node's GPUNode shows it.
  const absl::Status reported = AwaitDone(
      "the GPUNode reports the remediation", absl::Minutes(1),
      [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<Json> g = client_->Get(kGpuNodes, "", node);
        if (!g.ok()) return g.status();
        const Json status = g->value("status", Json::object());
        const Json remediation = status.value("remediation", Json::object());
        if (remediation.value("state", "") == "done" && remediation.value("attempts", 0) == 1 &&
            status.value("health", Json::object()).value("state", "") == "Healthy") {
          return "";
        }
        return "GPUNode status " + status.dump();
      });
  EXPECT_TRUE(reported.ok()) << reported;

  // The driver was restarted (a new pod), the trainer pod was drained and is whole elsewhere.
  driver_pods = OperandPods("gpuop-driver-debian12");
  ASSERT_TRUE(driver_pods.ok()) << driver_pods.status();
  ASSERT_TRUE(driver_pods->contains(node));
  EXPECT_NE(Name((*driver_pods)[node]), old_driver_pod);
  EXPECT_TRUE(PodRunningAndReady((*driver_pods)[node]));
  EXPECT_EQ(client_->Get(resources::kPods, apps_, trainer_pod).status().code(),
            absl::StatusCode::kNotFound);
  const absl::Status whole =
      AwaitDone("the trainer whole again", absl::Minutes(2), [&] { return TrainerNotReady(); });
  EXPECT_TRUE(whole.ok()) << whole;

  // The operator told the story in Events on the Node.
  std::vector<std::string> reasons;
  const absl::Status told =
      AwaitDone("remediation Events", absl::Minutes(1), [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<kube::ObjectList> events = client_->ListAll(resources::kEventsV1, "");
        if (!events.ok()) return events.status();
        std::vector<std::pair<std::string, std::string>> timed;
        for (const Json& e : events->items) {
          const std::string reason = e.value("reason", "");
          if (e["regarding"].value("kind", "") == "Node" &&
              e["regarding"].value("name", "") == node && absl::StartsWith(reason, "Remediation")) {
            timed.emplace_back(e.value("eventTime", ""), reason);
          }
        }
        std::sort(timed.begin(), timed.end());
        reasons.clear();
        for (const auto& [time, reason] : timed) reasons.push_back(reason);
        // The taint goes on with the first step's write and comes off with the last, so they
        // have no Events of their own.
        for (const char* want : {"RemediationDrain", "RemediationRestartDriver",
                                 "RemediationValidate", "RemediationDone"}) {
          if (std::find(reasons.begin(), reasons.end(), want) == reasons.end()) {
            return absl::StrCat("no ", want, " among ", absl::StrJoin(reasons, ", "));
          }
        }
        return "";
      });
  ASSERT_TRUE(told.ok()) << told;
  // In the order the steps ran.
  auto first = [&](const char* reason) {
    return std::find(reasons.begin(), reasons.end(), reason) - reasons.begin();
  };
  EXPECT_LT(first("RemediationDrain"), first("RemediationRestartDriver"))
      << absl::StrJoin(reasons, ", ");
  EXPECT_LT(first("RemediationRestartDriver"), first("RemediationValidate"));
  EXPECT_LT(first("RemediationValidate"), first("RemediationDone"));
}

}  // namespace gpuop::test
