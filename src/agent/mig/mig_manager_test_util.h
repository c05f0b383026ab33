#ifndef GPUOP_AGENT_MIG_MIG_MANAGER_TEST_UTIL_H_
#define GPUOP_AGENT_MIG_MIG_MANAGER_TEST_UTIL_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "agent/mig/fake_mig_node.h"
#include "agent/mig/layout_file.h"
#include "agent/mig/mig_manager.h"
#include "common/fake_clock.h"
#include "common/files.h"
#include "test/fakes/nvml/fake_machine.h"

namespace gpuop::agent::mig::testing {

inline constexpr char kTestConfig[] = R"(
version: v1
mig-configs:
  all-disabled:
    - {devices: all, mig-enabled: false}
  all-1g.5gb:
    - {devices: all, mig-enabled: true, mig-devices: {"1g.5gb": 7}}
  gpu0-as-is:
    - {devices: [0], mig-enabled: true, mig-devices: {"1g.5gb": 7}}
  gpu5-7g:
    - {devices: [5], mig-enabled: true, mig-devices: {"7g.40gb": 1}}
  too-big:
    - {devices: [4], mig-enabled: true, mig-devices: {"4g.20gb": 2}}
)";

inline constexpr char kDevicePlugin[] = "gpuop.io/deploy.device-plugin";
inline constexpr char kExporter[] = "gpuop.io/deploy.exporter";
inline constexpr char kHealth[] = "gpuop.io/deploy.health";

// Polls `condition` in real time until it holds (true) or `timeout` passes (false). Only for
// waiting on another thread; simulated time moves with the FakeClock.
template <typename Condition>
bool WaitFor(Condition condition, absl::Duration timeout = absl::Seconds(30)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!condition()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return true;
}

// The a100-8x-mig machine, a fake Node with the three GPU clients running (exporter disabled
// by label, the health monitor's label absent), a fake clock and a MigManager over them.
class MigManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(machine_.ok());
    ASSERT_TRUE(common::WriteFileAtomically(config_path(), kTestConfig).ok());
    node_.SetLabel(kDevicePlugin, "true");
    node_.SetLabel(kExporter, "false");
    node_.SetLabel("team", "ml");
    for (const char* component : {"device-plugin", "exporter", "health"}) {
      node_.AddPod({.key = absl::StrCat("gpuop/gpuop-", component, "-x1"),
                    .labels = {{"app.kubernetes.io/part-of", "gpuop"},
                               {"app.kubernetes.io/component", component}}});
    }
  }

  std::filesystem::path config_path() const { return machine_.dir() / "mig.yaml"; }
  std::filesystem::path layout_path() const { return machine_.dir() / "mig-layout"; }

  MigManagerOptions Options() {
    // Three of the default clients keep the exact writes short; client_pause_test covers the
    // whole default list.
    return {.config_file = config_path(),
            .layout_file = layout_path(),
            .components = {DefaultPausedComponents()[2], DefaultPausedComponents()[4],
                           DefaultPausedComponents()[3]},
            .change_deadline = absl::Minutes(10),
            .pod_stop_timeout = absl::Minutes(5),
            .poll_interval = absl::Seconds(2),
            .clock = &clock_};
  }

  MigManager& Manager(MigManagerOptions options) {
    manager_ = std::make_unique<MigManager>(*accelerator_, node_, std::move(options));
    return *manager_;
  }
  MigManager& Manager() { return Manager(Options()); }

  // SyncOnce on another thread, moving the fake clock by `step` whenever the sync waits on it.
  MigSyncResult SyncAdvancingClock(MigManager& manager, absl::Duration step = absl::Seconds(30)) {
    std::atomic<bool> done{false};
    MigSyncResult result;
    std::thread sync([&] {
      result = manager.SyncOnce();
      done = true;
    });
    while (!done) {
      if (clock_.waiters() > 0) clock_.Advance(step);
      absl::SleepFor(absl::Milliseconds(1));
    }
    sync.join();
    return result;
  }

  // Plays the operator: a paused deploy label removes that component's pods.
  void OperatorRemovesPausedPods() {
    node_.OnPatch([](FakeMigNode& node) {
      for (const auto& [label, component] : {std::pair{kDevicePlugin, "device-plugin"},
                                             {kExporter, "exporter"},
                                             {kHealth, "health"}}) {
        if (node.label(label) == kPausedValue) {
          node.RemovePods("app.kubernetes.io/component", component);
        }
      }
    });
  }

  // The deploy labels as they are now ("-" for absent).
  std::string DeployLabels() const {
    std::string out;
    for (const char* label : {kDevicePlugin, kExporter, kHealth}) {
      absl::StrAppend(&out, out.empty() ? "" : " ", node_.label(label).value_or("-"));
    }
    return out;
  }

  // Whether any write ever set a deploy label to paused.
  bool EverPaused() const {
    for (const FakeMigNode::Write& w : node_.writes()) {
      for (const auto& [key, value] : w.labels) {
        if (value == kPausedValue) return true;
      }
    }
    return false;
  }

  void ExpectRestored() const {
    EXPECT_EQ(DeployLabels(), "true false -");
    EXPECT_FALSE(node_.annotation(kPauseRecordAnnotation).has_value());
    EXPECT_EQ(node_.label("team"), "ml");
  }

  void ExpectState(const char* state) const {
    EXPECT_EQ(node_.label(kStateLabel), state);
    EXPECT_EQ(node_.label(kGpuopStateLabel), state);
  }

  std::string Reason() const { return node_.annotation(kReasonAnnotation).value_or(""); }

  fakes::FakeMachine machine_{"a100-8x-mig"};
  std::unique_ptr<hw::Accelerator> owned_accelerator_;
  hw::Accelerator* accelerator_ = machine_.ok() ? &machine_.nvml() : nullptr;
  FakeMigNode node_;
  common::FakeClock clock_;
  std::unique_ptr<MigManager> manager_;
};

}  // namespace gpuop::agent::mig::testing

#endif  // GPUOP_AGENT_MIG_MIG_MANAGER_TEST_UTIL_H_
