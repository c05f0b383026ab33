#include "test/node/node_e2e_mig_steps.h"

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "test/cluster/node_config.h"
#include "test/e2e/operator_e2e_util.h"
#include "test/node/node_e2e_driver_steps.h"
#include "test/node/node_e2e_fixture.h"
#include "test/node/node_e2e_reports.h"

namespace gpuop::test {

using nlohmann::json;
using ::testing::HasSubstr;

namespace {

constexpr char kLayout[] = "all-1g.5gb";
constexpr char kHolder[] = "mig-holder";

std::string NodePath() { return absl::StrCat("/api/v1/nodes/", kNodeName); }

absl::Status MergePatch(const std::string& path, const json& patch) {
  absl::StatusOr<ApiResponse> patched =
      Api()->Request("PATCH", path, &patch, "application/merge-patch+json");
  if (!patched.ok()) return patched.status();
  if (patched->status != 200) {
    return absl::InternalError(
        absl::StrCat("PATCH ", path, ": ", patched->status, " ", patched->raw));
  }
  return absl::OkStatus();
}

std::set<std::string> RunningClients() {
  absl::StatusOr<std::vector<json>> pods = Pods(kNamespace);
  if (!pods.ok()) return {};
  const std::vector<std::string> names = ClientPods(*pods);
  return {names.begin(), names.end()};
}

// The MIG manager's state label, the reason annotation, and the deploy labels it paused.
struct MigState {
  std::string state;
  std::string reason;
  std::vector<std::string> paused;
};

absl::StatusOr<MigState> ReadMigState() {
  absl::StatusOr<json> node = Get(NodePath());
  if (!node.ok()) return node.status();
  MigState out{.state = LabelOf(*node, "nvidia.com/mig.config.state"),
               .reason = AnnotationOf(*node, "gpuop.io/mig.config.reason")};
  const json labels = (*node)["metadata"].value("labels", json::object());
  for (const auto& [key, value] : labels.items()) {
    if (value == "paused-for-mig-change") out.paused.push_back(key);
  }
  return out;
}

// Waits until the state label says `want`; reports the state, reason and paused labels meanwhile.
absl::StatusOr<MigState> AwaitMigState(const std::string& want, absl::Duration timeout) {
  MigState last;
  absl::Status reached =
      AwaitDone(absl::StrCat("nvidia.com/mig.config.state=", want), timeout,
                [&]() -> absl::StatusOr<std::string> {
                  absl::StatusOr<MigState> now = ReadMigState();
                  if (!now.ok()) return now.status();
                  last = *now;
                  if (now->state == want) return std::string();
                  return absl::StrCat("state ", now->state, " (", now->reason, ")");
                });
  if (!reached.ok()) return reached;
  return last;
}

}  // namespace

void MigManagerResetsTheGpusStep() {
  const std::set<std::string> clients_before = RunningClients();
  ASSERT_FALSE(clients_before.empty());

  // A user's monitoring-style pod that keeps NVML open on one whole GPU (one of GPUs 4-7, the
  // only whole GPUs under the mixed strategy).
  json holder = ProbePod(kHolder);
  holder["spec"]["containers"][0]["command"] = {"/usr/local/bin/gpu-probe", "--sleep", "--hold"};
  holder["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/gpu", 1}}}};
  const std::string holder_path =
      absl::StrCat("/api/v1/namespaces/", kWorkloads, "/pods/", kHolder);
  // Whatever happens, the user's pod and label go again (the uninstall step checks the Node).
  absl::Cleanup tidy = [&] {
    (void)Api()->Delete(holder_path);
    (void)MergePatch(NodePath(),
                     {{"metadata", {{"labels", {{"nvidia.com/mig.config", nullptr}}}}}});
  };
  absl::StatusOr<json> created =
      Api()->Create(absl::StrCat("/api/v1/namespaces/", kWorkloads, "/pods"), holder);
  ASSERT_TRUE(created.ok()) << created.status();
  absl::StatusOr<json> report;
  absl::Status holding = WaitUntil("the holder's report", absl::Minutes(2), [&] {
    report = ProbeReport(Cluster().node().pod_logs, kWorkloads, kHolder);
    return absl::StatusOr<bool>(report.ok());
  });
  ASSERT_TRUE(holding.ok()) << holding;
  ASSERT_EQ((*report)["nvml"].value("count", 0), 1) << report->dump();
  ASSERT_TRUE((*report)["nvml"]["error"].is_null()) << report->dump();

  // The MIG manager, and the layout asked for through the node label as with mig-parted.
  const absl::Status enabled =
      MergePatch("/apis/gpuop.io/v1alpha1/gpuclusterpolicies/default",
                 {{"spec", {{"components", {{"migManager", {{"enabled", true}}}}}}}});
  ASSERT_TRUE(enabled.ok()) << enabled;
  const absl::Status labelled =
      MergePatch(NodePath(), {{"metadata", {{"labels", {{"nvidia.com/mig.config", kLayout}}}}}});
  ASSERT_TRUE(labelled.ok()) << labelled;
  const absl::Time asked = absl::Now();

  // The reset that would activate MIG mode on the held GPU is refused by the driver: the change
  // fails with its reason, and every paused client is given back.
  absl::StatusOr<MigState> failed = AwaitMigState("failed", absl::Minutes(6));
  ASSERT_TRUE(failed.ok()) << failed.status();
  EXPECT_THAT(failed->reason, HasSubstr("the GPU reset that activates the MIG mode was refused"));
  EXPECT_THAT(failed->reason, HasSubstr("another process is using it")) << "nvidia-smi's answer";
  std::printf("[node] MIG layout %s asked -> failed (reset refused): %s\n[node]   %s\n", kLayout,
              absl::FormatDuration(absl::Now() - asked).c_str(), failed->reason.c_str());
  absl::Status restored = AwaitDone("the GPU clients given back", absl::Minutes(1),
                                    [&]() -> absl::StatusOr<std::string> {
                                      absl::StatusOr<MigState> now = ReadMigState();
                                      if (!now.ok()) return now.status();
                                      return absl::StrJoin(now->paused, ", ");
                                    });
  EXPECT_TRUE(restored.ok()) << restored;

  // Without the holder, the retry applies the layout: every GPU client of gpuop's stops first.
  const absl::Status deleted = Api()->Delete(holder_path);
  ASSERT_TRUE(deleted.ok()) << deleted;
  const absl::Time released = absl::Now();
  absl::StatusOr<MigState> applied = AwaitMigState("success", absl::Minutes(6));
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_THAT(applied->reason, HasSubstr(absl::StrCat("MIG layout ", kLayout, " applied")));
  EXPECT_THAT(applied->paused, ::testing::IsEmpty());
  std::printf(
      "[node] holder deleted -> MIG layout applied (retry, clients paused): %s\n[node]   %s\n",
      absl::FormatDuration(absl::Now() - released).c_str(), applied->reason.c_str());

  // Seven 1g.5gb instances on each of the eight GPUs, from the device plugin's new pod.
  absl::Status served = AwaitDone("56 nvidia.com/mig-1g.5gb allocatable", absl::Minutes(4),
                                  [&]() -> absl::StatusOr<std::string> {
                                    absl::StatusOr<json> node = Get(NodePath());
                                    if (!node.ok()) return node.status();
                                    const std::string mig =
                                        Allocatable(*node, "nvidia.com/mig-1g.5gb");
                                    const std::string whole = Allocatable(*node, "nvidia.com/gpu");
                                    if (mig == "56" && (whole == "0" || whole.empty()))
                                      return std::string();
                                    return absl::StrCat("mig-1g.5gb ", mig, ", gpu ", whole);
                                  });
  EXPECT_TRUE(served.ok()) << served;

  // Every client that ran before the change was stopped; each component runs again.
  const std::vector<std::string> components = {"cdi",    "labels",   "device-plugin",
                                               "health", "exporter", "validator"};
  absl::Status back = AwaitDone("every GPU client running again, as new pods", absl::Minutes(3),
                                [&]() -> absl::StatusOr<std::string> {
                                  absl::StatusOr<std::vector<json>> pods = Pods(kNamespace);
                                  if (!pods.ok()) return pods.status();
                                  std::vector<std::string> wrong;
                                  for (const std::string& name : ClientPods(*pods)) {
                                    if (clients_before.contains(name))
                                      wrong.push_back(name + " was not stopped");
                                  }
                                  std::set<std::string> ready;
                                  for (const json& pod : *pods) {
                                    if (PodRunningAndReady(pod))
                                      ready.insert(LabelOf(pod, "app.kubernetes.io/component"));
                                  }
                                  for (const std::string& component : components) {
                                    if (!ready.contains(component))
                                      wrong.push_back(component + " not ready");
                                  }
                                  return absl::StrJoin(wrong, "; ");
                                });
  EXPECT_TRUE(back.ok()) << back;

  // The layout is the user's label (removed by `tidy`); gpuop's own labels go with the uninstall.
}

}  // namespace gpuop::test
