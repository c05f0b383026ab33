// gpuop-agent power: lowers the power limit of idle, unallocated GPUs to a floor and restores it
// when they are needed, until SIGTERM.
#include <cstdio>
#include <cstdlib>

#include "agent/node/node_label_watch.h"
#include "agent/podresources/pod_resources.h"
#include "agent/power/policy_label.h"
#include "agent/power/power_manager.h"
#include "cmd/gpuop-agent/accelerators.h"
#include "cmd/gpuop-agent/commands.h"
#include "common/signals.h"

namespace gpuop::cmd {
namespace {

void LogDecision(const agent::power::PowerDecision& d) {
  std::fprintf(stderr, "power: gpu=%d uuid=%s action=%s from=%.0fW to=%.0fW reason=\"%s\"\n",
               d.gpu_index, d.gpu_uuid.c_str(), agent::power::ActionName(d.action).c_str(),
               d.from_watts, d.to_watts, d.reason.c_str());
}

// `power --restore`: one pass over every accelerator family; 0 when every limit it lowered is
// back (or none was lowered), 1 when the GPUs could not be read or a limit could not be set.
int Restore(std::vector<std::unique_ptr<hw::Accelerator>>& accelerators,
            agent::podresources::PodLister& pods, const agent::power::PowerPolicy& policy,
            agent::power::LimitRecord& record) {
  int code = 0;
  for (auto& a : accelerators) {
    agent::power::PowerManager manager(*a, pods, {.policy = policy, .record = &record});
    absl::StatusOr<std::vector<agent::power::PowerDecision>> restored = manager.RestoreAll();
    if (!restored.ok()) {
      std::fprintf(stderr, "power: %s\n", restored.status().ToString().c_str());
      code = 1;
      continue;
    }
    for (const auto& d : *restored) {
      LogDecision(d);
      if (d.action == agent::power::PowerDecision::Action::kFailed) code = 1;
    }
    std::fprintf(stderr, "power: restored %zu limits\n", restored->size());
  }
  return code;
}

}  // namespace

void AddPowerCommand(CLI::App& app) {
  struct Flags {
    HardwareFlags hardware;
    int idle_after_seconds = 900;
    int floor_percent = 0;
    double floor_watts = 0;
    unsigned int utilization_threshold = 5;
    int interval_seconds = 30;
    std::string pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
    std::string limit_record{agent::power::FileLimitRecord::kDefaultPath};
    bool restore = false;
    std::string node_name;
    std::string kubeconfig;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "power", "Lower the power limit of idle, unallocated GPUs; restore it when needed");
  AddHardwareFlags(*sub, flags->hardware);
  sub->add_option("--idle-after", flags->idle_after_seconds,
                  "Seconds a GPU must be idle and unallocated before its limit is lowered")
      ->check(CLI::Range(1, 7 * 86400))
      ->capture_default_str();
  auto* percent = sub->add_option("--floor-percent", flags->floor_percent,
                                  "The lowered limit as a percentage of the GPU's default limit")
                      ->check(CLI::Range(1, 100));
  sub->add_option("--floor-watts", flags->floor_watts, "The lowered limit in watts")
      ->check(CLI::PositiveNumber)
      ->excludes(percent);
  sub->add_option("--utilization-threshold", flags->utilization_threshold,
                  "Utilization (%) at or below which a GPU counts as idle")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  sub->add_option("--interval", flags->interval_seconds, "Seconds between rounds")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  sub->add_option("--pod-resources-socket", flags->pod_resources_socket,
                  "The kubelet's PodResources socket: which GPUs are allocated")
      ->capture_default_str();
  sub->add_option("--limit-record", flags->limit_record,
                  "Where the limits it lowers are written down, with the ones it found (on the "
                  "node, so that a restarted agent or --restore gives them back)")
      ->capture_default_str();
  AddNodeNameFlag(*sub, flags->node_name,
                  "followed for its gpuop.io/power.policy label (a node pool's power settings, "
                  "over these flags); empty: the flags alone");
  sub->add_option("--kubeconfig", flags->kubeconfig, "Kubeconfig; in-cluster when unset");
  sub->add_flag("--restore", flags->restore,
                "Give back every limit the record says was lowered (the uninstall's undo), then "
                "exit");
  sub->callback([flags] {
    common::BlockTerminationSignals();
    agent::power::PowerPolicy policy{.enabled = true,
                                     .idle_for = absl::Seconds(flags->idle_after_seconds),
                                     .utilization_threshold_percent = flags->utilization_threshold};
    if (flags->floor_percent > 0) policy.floor_fraction = flags->floor_percent / 100.0;
    if (flags->floor_watts > 0) policy.floor_watts = flags->floor_watts;
    if (absl::Status valid = agent::power::ValidatePowerPolicy(policy); !valid.ok()) {
      std::fprintf(stderr, "power: %s\n", valid.ToString().c_str());
      std::exit(2);
    }
    std::unique_ptr<agent::podresources::PodLister> pods =
        agent::podresources::NewKubeletPodLister(flags->pod_resources_socket);
    auto accelerators = OpenAccelerators(flags->hardware);
    // One record for every accelerator family (GPUs are told apart by UUID); its updates are
    // serialised by the record.
    agent::power::FileLimitRecord record(flags->limit_record);
    if (flags->restore) std::exit(Restore(accelerators, *pods, policy, record));
    std::vector<std::unique_ptr<agent::power::PowerManager>> managers;
    for (auto& a : accelerators) {
      managers.push_back(std::make_unique<agent::power::PowerManager>(
          *a, *pods,
          agent::power::PowerManagerOptions{.policy = policy,
                                            .interval = absl::Seconds(flags->interval_seconds),
                                            .on_decision = LogDecision,
                                            .record = &record}));
      managers.back()->Start();
    }
    std::fprintf(stderr, "power: managing %zu accelerator families, idle after %ds\n",
                 managers.size(), flags->idle_after_seconds);
    // The node's pool may set other power settings: follow its label, keeping the policy in
    // force when a value does not parse.
    std::unique_ptr<kube::Client> client;
    std::unique_ptr<agent::NodeLabelWatch> watch;
    if (!flags->node_name.empty() && !managers.empty()) {
      absl::StatusOr<std::unique_ptr<kube::Client>> made =
          MakeClient(flags->kubeconfig, "agent-power");
      if (!made.ok()) {
        std::fprintf(stderr, "power: not following %s: %s\n", agent::power::kPowerPolicyLabel,
                     made.status().ToString().c_str());
      } else {
        client = *std::move(made);
        watch = std::make_unique<agent::NodeLabelWatch>(
            *client, flags->node_name, agent::power::kPowerPolicyLabel,
            [&managers, policy](const std::string& value) {
              absl::StatusOr<agent::power::PowerPolicy> now =
                  agent::power::PolicyForLabel(policy, value);
              if (!now.ok()) {
                std::fprintf(stderr, "power: %s; keeping the policy in force\n",
                             now.status().ToString().c_str());
                return;
              }
              std::fprintf(stderr, "power: policy %s\n",
                           value.empty() ? "from the flags" : value.c_str());
              for (auto& m : managers) m->SetPolicy(*now);
            });
        watch->Start();
      }
    }
    const int sig = common::WaitForTerminationSignal();
    if (watch != nullptr) watch->Stop();
    std::fprintf(stderr, "power: signal %d, stopping: giving back the limits it lowered\n", sig);
    for (auto& m : managers) m->Stop();
  });
}

}  // namespace gpuop::cmd
