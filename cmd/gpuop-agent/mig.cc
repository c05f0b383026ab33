// gpuop-agent mig: keeps the GPUs' MIG layout equal to the one the node label
// nvidia.com/mig.config names, until SIGTERM.
#include <cstdio>
#include <cstdlib>

#include "agent/mig/mig_manager.h"
#include "cmd/gpuop-agent/accelerators.h"
#include "cmd/gpuop-agent/commands.h"
#include "common/signals.h"
#include "kube/events/event_recorder.h"

namespace gpuop::cmd {
namespace {

[[noreturn]] void Fail(const absl::Status& status) {
  std::fprintf(stderr, "mig: %s\n", status.ToString().c_str());
  std::exit(1);
}

}  // namespace

void AddMigCommand(CLI::App& app) {
  struct Flags {
    HardwareFlags hardware;
    std::string node_name;
    std::string pod_name;
    std::string pod_namespace;
    std::string kubeconfig;
    std::string config_file = "/etc/gpuop/mig/config.yaml";
    std::string layout_file = "/run/gpuop/mig-layout";
    int change_timeout_seconds = 600;
    bool force = false;
    bool with_reboot = false;
    std::string reboot_annotation = "gpuop.io/reboot-requested";
  };
  auto flags = std::make_shared<Flags>();
  if (const char* pod = std::getenv("POD_NAME")) flags->pod_name = pod;
  if (const char* ns = std::getenv("POD_NAMESPACE")) flags->pod_namespace = ns;
  CLI::App* sub =
      app.add_subcommand("mig", "Apply the MIG layout the node label nvidia.com/mig.config names");
  AddHardwareFlags(*sub, flags->hardware);
  AddNodeNameFlag(*sub, flags->node_name, "the Node whose label selects the layout (required)");
  sub->add_option("--pod-name", flags->pod_name, "This pod ($POD_NAME), as the Events' reporter");
  sub->add_option("--pod-namespace", flags->pod_namespace,
                  "Namespace of the GPU clients paused around a change ($POD_NAMESPACE; empty: "
                  "all namespaces)");
  sub->add_option("--kubeconfig", flags->kubeconfig, "Kubeconfig; in-cluster when unset");
  sub->add_option("--config-file", flags->config_file,
                  "The named layouts (mig-parted format), re-read at every change")
      ->capture_default_str();
  sub->add_option("--layout-file", flags->layout_file,
                  "Rewritten after every change for the device plugin and CDI (empty: none)")
      ->capture_default_str();
  sub->add_option("--change-timeout", flags->change_timeout_seconds,
                  "Seconds a change may take before it ends `failed`")
      ->check(CLI::Range(30, 86400))
      ->capture_default_str();
  sub->add_flag("--force", flags->force,
                "Change GPUs even when processes run on them (they will crash)");
  sub->add_flag("--with-reboot", flags->with_reboot,
                "When the GPU reset that activates a MIG mode change is refused, set the state "
                "`rebooting` and ask for a reboot through --reboot-annotation (mig-parted's "
                "WITH_REBOOT)");
  sub->add_option("--reboot-annotation", flags->reboot_annotation,
                  "The Node annotation that asks the reboot tool for a reboot")
      ->capture_default_str();
  sub->callback([flags] {
    common::BlockTerminationSignals();
    if (flags->node_name.empty()) {
      Fail(absl::InvalidArgumentError("--node-name (or $NODE_NAME) is required"));
    }
    auto accelerators = OpenAccelerators(flags->hardware);
    hw::Accelerator* nvidia = nullptr;
    for (auto& a : accelerators) {
      if (a->vendor() == hw::Vendor::kNvidia) nvidia = a.get();
    }
    if (nvidia == nullptr) {
      Fail(absl::FailedPreconditionError("no NVIDIA driver on this node: MIG needs NVML"));
    }
    absl::StatusOr<std::unique_ptr<kube::Client>> client =
        MakeClient(flags->kubeconfig, "agent-mig");
    if (!client.ok()) Fail(client.status());
    absl::StatusOr<std::unique_ptr<kube::EventRecorder>> recorder = kube::EventRecorder::Create(
        **client,
        {.reporting_controller = "gpuop.io/agent-mig",
         .reporting_instance = flags->pod_name.empty() ? "gpuop-agent-mig" : flags->pod_name});
    if (!recorder.ok()) Fail(recorder.status());
    agent::mig::KubeMigNode node(**client, flags->node_name, agent::mig::kConfigLabel,
                                 recorder->get(), flags->pod_namespace);
    agent::mig::MigManager manager(*nvidia, node,
                                   {.config_file = flags->config_file,
                                    .layout_file = flags->layout_file,
                                    .change_deadline = absl::Seconds(flags->change_timeout_seconds),
                                    .force = flags->force,
                                    .with_reboot = flags->with_reboot,
                                    .reboot_annotation = flags->reboot_annotation});
    manager.Start();
    std::fprintf(stderr, "mig: following %s on node %s\n", agent::mig::kConfigLabel,
                 flags->node_name.c_str());
    const int sig = common::WaitForTerminationSignal();
    std::fprintf(stderr, "mig: signal %d, stopping\n", sig);
    manager.Stop();
    (*recorder)->Stop();
  });
}

}  // namespace gpuop::cmd
