// The power manager against the fake NVML machine (8 x H100: 700 W default, 200-700 W): the
// limits really change in the driver, and the clock is a FakeClock.
#include "agent/power/power_manager.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "agent/podresources/fake_pod_lister.h"
#include "common/fake_clock.h"
#include "test/fakes/nvml/fake_machine.h"

namespace gpuop::agent::power {
namespace {

using ::testing::HasSubstr;
using Action = PowerDecision::Action;

class PowerManagerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(machine_.ok()); }

  PowerManager& Manager(PowerPolicy policy) {
    manager_ = std::make_unique<PowerManager>(
        machine_.nvml(), allocations_,
        PowerManagerOptions{.policy = policy,
                            .on_decision = [this](const PowerDecision& d) { log_.push_back(d); },
                            .clock = &clock_,
                            .record = record_});
    return *manager_;
  }

  std::vector<PowerDecision> Tick() {
    auto decisions = manager_->Tick();
    EXPECT_TRUE(decisions.ok()) << decisions.status();
    return decisions.ok() ? *decisions : std::vector<PowerDecision>{};
  }

  // Ticks after `idle` of fake time so that idle GPUs qualify.
  std::vector<PowerDecision> TickAfter(absl::Duration idle) {
    clock_.Advance(idle);
    return Tick();
  }

  podresources::PodDevice Holding(int gpu, const std::string& pod, const std::string& suffix = "") {
    return {.resource = "nvidia.com/gpu",
            .device_id = machine_.Uuid(gpu) + suffix,
            .pod_namespace = "ml",
            .pod = pod,
            .container = "main"};
  }

  static constexpr PowerPolicy kPolicy{.enabled = true,
                                       .idle_for = absl::Minutes(10),
                                       .floor_fraction = 0.5,
                                       .utilization_threshold_percent = 5};

  fakes::FakeMachine machine_{"h100-8x-nvswitch", /*frozen_time=*/true};
  podresources::FakePodLister allocations_;
  common::FakeClock clock_;
  // The node's record: it outlives the managers, as the file does a restarted agent.
  MemoryLimitRecord node_record_;
  LimitRecord* record_ = &node_record_;
  std::vector<PowerDecision> log_;
  std::unique_ptr<PowerManager> manager_;
};

TEST_F(PowerManagerTest, IdleUnallocatedGpusAreLoweredAfterTheIdleTime) {
  allocations_.Set(std::vector<podresources::PodDevice>{Holding(0, "train-0")});
  machine_.Control("set 1 gpu_util 80");
  machine_.Control("process 2 4242 1024");
  Manager(kPolicy);
  std::vector<PowerDecision> d = Tick();
  ASSERT_EQ(d.size(), 8u);
  EXPECT_EQ(d[0].reason, "allocated to ml/train-0");
  EXPECT_EQ(d[1].reason, "busy: utilization 80% > 5%");
  EXPECT_EQ(d[2].reason, "busy: processes 4242");
  EXPECT_EQ(d[3].reason, "idle and unallocated for 0 of 10m");
  d = TickAfter(absl::Minutes(9));
  EXPECT_EQ(d[3].action, Action::kNone);
  EXPECT_TRUE(log_.empty());

  d = TickAfter(absl::Minutes(1));
  for (int gpu = 0; gpu < 8; ++gpu) {
    EXPECT_EQ(d[gpu].action, gpu < 3 ? Action::kNone : Action::kLowered) << gpu;
    EXPECT_EQ(machine_.Limit(gpu), gpu < 3 ? 700 : 350) << gpu;
  }
  EXPECT_EQ(d[3].from_watts, 700);
  EXPECT_EQ(d[3].to_watts, 350);
  EXPECT_EQ(d[3].gpu_uuid, machine_.Uuid(3));
  EXPECT_EQ(d[3].reason, "idle for 10m (utilization 0% <= 5%, no processes) and unallocated");
  EXPECT_EQ(log_.size(), 5u);  // the five lowerings, logged
  // Lowered GPUs stay lowered without further writes.
  d = TickAfter(absl::Minutes(5));
  EXPECT_EQ(d[3].action, Action::kNone);
  EXPECT_EQ(log_.size(), 5u);
}

TEST_F(PowerManagerTest, AllocationOrWorkRestoresAtOnce) {
  Manager(kPolicy);
  Tick();
  TickAfter(absl::Minutes(10));
  ASSERT_EQ(machine_.Limit(3), 350);
  // A time-sliced replica of GPU 3 is allocated; GPU 4 starts working; GPU 5 runs a process.
  allocations_.Set(std::vector<podresources::PodDevice>{Holding(3, "infer-1", "::2")});
  machine_.Control("set 4 gpu_util 50");
  machine_.Control("process 5 777 2048");
  std::vector<PowerDecision> d = Tick();
  EXPECT_EQ(d[3].action, Action::kRestored);
  EXPECT_EQ(d[3].reason, "allocated to ml/infer-1");
  EXPECT_EQ(d[3].to_watts, 700);
  EXPECT_EQ(d[4].action, Action::kRestored);
  EXPECT_EQ(d[4].reason, "busy: utilization 50% > 5%");
  EXPECT_EQ(d[5].action, Action::kRestored);
  EXPECT_EQ(d[5].reason, "busy: processes 777");
  EXPECT_EQ(d[6].action, Action::kNone);
  for (int gpu = 3; gpu <= 5; ++gpu) EXPECT_EQ(machine_.Limit(gpu), 700) << gpu;
  EXPECT_EQ(machine_.Limit(6), 350);

  // Idle and free again: the idle time starts over.
  allocations_.Set(std::vector<podresources::PodDevice>{});
  machine_.Control("set 4 gpu_util 0");
  machine_.Control("process-exit 5 777");
  d = TickAfter(absl::Minutes(1));
  EXPECT_EQ(d[3].action, Action::kNone);
  d = TickAfter(absl::Minutes(10));
  EXPECT_EQ(d[3].action, Action::kLowered);
  EXPECT_EQ(machine_.Limit(3), 350);
}

TEST_F(PowerManagerTest, UnknownAllocationsCountAsAllocated) {
  Manager(kPolicy);
  Tick();
  TickAfter(absl::Minutes(10));
  ASSERT_EQ(machine_.Limit(7), 350);
  allocations_.Set(absl::UnavailableError("kubelet pod-resources socket: connection refused"));
  const std::vector<PowerDecision> d = Tick();
  for (int gpu = 0; gpu < 8; ++gpu) {
    EXPECT_EQ(d[gpu].action, Action::kRestored) << gpu;
    EXPECT_THAT(d[gpu].reason, HasSubstr("allocations unknown (kubelet pod-resources socket"));
    EXPECT_EQ(machine_.Limit(gpu), 700);
  }
}

TEST_F(PowerManagerTest, LimitsStayWithinTheConstraints) {
  Manager({.enabled = true, .idle_for = absl::Minutes(1), .floor_watts = 50});
  Tick();
  std::vector<PowerDecision> d = TickAfter(absl::Minutes(1));
  EXPECT_EQ(d[0].to_watts, 200);  // the minimum, not 50
  EXPECT_EQ(machine_.Limit(0), 200);

  machine_.Control("set all gpu_util 100");
  Tick();
  Manager({.enabled = true, .idle_for = absl::Minutes(1), .floor_watts = 900});
  machine_.Control("set all gpu_util 0");
  Tick();
  d = TickAfter(absl::Minutes(2));
  EXPECT_EQ(d[0].action, Action::kNone);
  EXPECT_EQ(d[0].reason, "limit 700 W is at or below the floor 700 W");
  EXPECT_EQ(machine_.Limit(0), 700);
}

TEST_F(PowerManagerTest, ARestartGivesBackExactlyWhatTheRecordSays) {
  ASSERT_TRUE(machine_.nvml().SetPowerLimit(6, 500).ok());  // an administrator's limit
  Manager(kPolicy);
  Tick();
  TickAfter(absl::Minutes(10));
  ASSERT_EQ(machine_.Limit(5), 350);
  ASSERT_EQ(machine_.Limit(6), 350);
  absl::StatusOr<LimitMap> recorded = node_record_.Load();
  ASSERT_TRUE(recorded.ok());
  EXPECT_EQ(recorded->size(), 8u);
  EXPECT_EQ(recorded->at(machine_.Uuid(6)),
            (RecordedLimit{.original_watts = 500, .lowered_watts = 350}));
  // While the agent is away, the driver of GPU 7 reloads: its limit is the default again.
  ASSERT_TRUE(machine_.nvml().SetPowerLimit(7, 700).ok());

  // A new agent gives back what the record says, the administrator's 500 W included.
  Manager(kPolicy);
  allocations_.Set(
      std::vector<podresources::PodDevice>{Holding(5, "a"), Holding(6, "b"), Holding(7, "c")});
  std::vector<PowerDecision> d = Tick();
  EXPECT_EQ(d[5].action, Action::kRestored);
  EXPECT_EQ(machine_.Limit(5), 700);
  EXPECT_EQ(d[6].to_watts, 500);
  EXPECT_EQ(machine_.Limit(6), 500);
  EXPECT_EQ(d[7].action, Action::kNone) << "nothing of ours on GPU 7";
  recorded = node_record_.Load();
  ASSERT_TRUE(recorded.ok());
  EXPECT_FALSE(recorded->contains(machine_.Uuid(5)));
  EXPECT_FALSE(recorded->contains(machine_.Uuid(6)));
  EXPECT_FALSE(recorded->contains(machine_.Uuid(7))) << "dropped: the limit is not ours";
  EXPECT_EQ(recorded->size(), 5u) << "GPUs 0-4 are still lowered";
}

TEST_F(PowerManagerTest, RestoreAllGivesBackEveryRecordedLimit) {
  Manager(kPolicy);
  Tick();
  TickAfter(absl::Minutes(10));
  ASSERT_EQ(machine_.Limit(2), 350);
  ASSERT_TRUE(machine_.nvml().SetPowerLimit(4, 600).ok());  // someone else's, after the lowering

  // The uninstall's undo runs in a fresh process with another policy: the record is enough.
  PowerManager& undo = Manager({.enabled = false});
  absl::StatusOr<std::vector<PowerDecision>> restored = undo.RestoreAll();
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(restored->size(), 7u) << "every GPU lowered; not GPU 4";
  for (const PowerDecision& d : *restored) {
    EXPECT_EQ(d.action, Action::kRestored) << d.gpu_index;
    EXPECT_NE(d.gpu_index, 4);
  }
  for (int gpu = 0; gpu < 8; ++gpu) {
    EXPECT_EQ(machine_.Limit(gpu), gpu == 4 ? 600 : 700) << gpu;
  }
  // Nothing left to give back, and nothing recorded.
  restored = undo.RestoreAll();
  ASSERT_TRUE(restored.ok());
  EXPECT_TRUE(restored->empty());
  absl::StatusOr<LimitMap> recorded = node_record_.Load();
  ASSERT_TRUE(recorded.ok());
  EXPECT_TRUE(recorded->empty());
}

// A ResourceClaim's GPU (NVIDIA's DRA driver: "gpu-<minor>") is as allocated as a device
// plugin's.
TEST_F(PowerManagerTest, GpusAllocatedThroughDraCountAsAllocated) {
  allocations_.Set(std::vector<podresources::PodDevice>{
      {.device_id = "gpu-3",
       .pod_namespace = "ml",
       .pod = "train-0",
       .container = "main",
       .dra = podresources::DraDevice{.driver = "gpu.nvidia.com",
                                      .pool = "node-a",
                                      .device = "gpu-3",
                                      .claim_name = "one-gpu",
                                      .claim_namespace = "ml"}}});
  Manager(kPolicy);
  Tick();
  const std::vector<PowerDecision> d = TickAfter(absl::Minutes(10));
  EXPECT_EQ(d[3].action, Action::kNone);
  EXPECT_EQ(d[3].reason, "allocated to ml/train-0");
  EXPECT_EQ(machine_.Limit(3), 700);
  EXPECT_EQ(d[2].action, Action::kLowered);
}

// A record that cannot be written: nothing is lowered, since it could not be given back.
class UnwritableRecord : public LimitRecord {
 public:
  absl::StatusOr<LimitMap> Load() override { return LimitMap{}; }
  absl::Status Save(const LimitMap&) override {
    return absl::InternalError("write /var/lib/gpuop/power-limits.json: No space left on device");
  }
};

TEST_F(PowerManagerTest, NoLimitIsLoweredThatCannotBeRecorded) {
  UnwritableRecord full;
  record_ = &full;
  Manager(kPolicy);
  Tick();
  const std::vector<PowerDecision> d = TickAfter(absl::Minutes(10));
  EXPECT_EQ(d[0].action, Action::kFailed);
  EXPECT_THAT(d[0].reason, HasSubstr("record the limit before lowering it"));
  EXPECT_THAT(d[0].reason, HasSubstr("No space left on device"));
  for (int gpu = 0; gpu < 8; ++gpu) EXPECT_EQ(machine_.Limit(gpu), 700) << gpu;
}

// nvml.h tells the management limit (the one set) from the enforced one (which other limiters
// can hold lower). The manager lowers from and restores to the management limit.
TEST_F(PowerManagerTest, WorksFromTheManagementLimitNotTheEnforcedOne) {
  machine_.Control("set 1 power_cap_w 450");
  Manager(kPolicy);
  Tick();
  std::vector<PowerDecision> d = TickAfter(absl::Minutes(10));
  EXPECT_EQ(d[1].action, Action::kLowered);
  EXPECT_EQ(d[1].from_watts, 700);
  allocations_.Set(std::vector<podresources::PodDevice>{Holding(1, "a")});
  d = Tick();
  EXPECT_EQ(d[1].action, Action::kRestored);
  EXPECT_EQ(d[1].to_watts, 700) << "not the 450 W cap";
  EXPECT_EQ(machine_.Limit(1), 700);
}

TEST_F(PowerManagerTest, LimitChangedBySomeoneElseIsLeftAlone) {
  PowerManager& manager = Manager(kPolicy);
  Tick();
  TickAfter(absl::Minutes(10));
  ASSERT_TRUE(machine_.nvml().SetPowerLimit(3, 600).ok());
  std::vector<PowerDecision> d = Tick();
  EXPECT_EQ(d[3].reason, "limit changed to 600 W by someone else; left alone");
  allocations_.Set(std::vector<podresources::PodDevice>{Holding(3, "x")});
  d = Tick();
  EXPECT_EQ(d[3].action, Action::kNone);
  EXPECT_EQ(machine_.Limit(3), 600);
  EXPECT_FALSE(manager.state().at(3).lowered);
}

TEST_F(PowerManagerTest, DisablingThePolicyRestoresAndADisabledOneChangesNothing) {
  PowerManager& manager = Manager(kPolicy);
  Tick();
  TickAfter(absl::Minutes(10));
  ASSERT_EQ(machine_.Limit(2), 350);
  manager.SetPolicy({.enabled = false});
  std::vector<PowerDecision> d = Tick();
  EXPECT_EQ(d[2].action, Action::kRestored);
  EXPECT_EQ(d[2].reason, "power management disabled");
  EXPECT_EQ(machine_.Limit(2), 700);
  d = TickAfter(absl::Hours(1));
  for (const PowerDecision& decision : d) EXPECT_EQ(decision.action, Action::kNone);
}

TEST_F(PowerManagerTest, LostGpuIsSkipped) {
  Manager(kPolicy);
  machine_.Control("lost 4");
  const std::vector<PowerDecision> d = Tick();
  EXPECT_EQ(d[4].action, Action::kSkipped);
  EXPECT_EQ(d[4].reason, "GPU lost");
  EXPECT_EQ(ActionName(d[4].action), "skipped");
}

TEST_F(PowerManagerTest, StartRunsRoundsUntilStoppedAndStopGivesTheLimitsBack) {
  PowerManager& manager = Manager(kPolicy);
  manager.Start();
  clock_.AwaitWaiters(1);  // the first round is done; the thread waits for the next
  clock_.Advance(absl::Minutes(11));
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (machine_.Limit(0) != 350 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(machine_.Limit(0), 350);
  manager.Stop();
  EXPECT_EQ(machine_.Limit(0), 700);
  bool logged = false;
  for (const PowerDecision& d : log_) {
    logged = logged || (d.gpu_index == 0 && d.action == Action::kRestored &&
                        absl::StrContains(d.reason, "stopping"));
  }
  EXPECT_TRUE(logged) << "the restore on stop is in the decision log";
}

}  // namespace
}  // namespace gpuop::agent::power
