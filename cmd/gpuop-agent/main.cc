// gpuop-agent: the per-node agent. One binary, one subcommand per node component; the operator
// runs each component as its own DaemonSet.
#include <cstdlib>

#include "cmd/gpuop-agent/commands.h"
#include "common/cli.h"

int main(int argc, char** argv) {
  CLI::App app{
      "gpuop node agent: makes a node's GPUs discoverable, schedulable, monitored and "
      "healthy.",
      "gpuop-agent"};
  app.require_subcommand(0, 1);
  gpuop::common::AddVersionFlag(app, "gpuop-agent");
  gpuop::cmd::AddDiscoverCommand(app);
  gpuop::cmd::AddDiscoverPciCommand(app);
  gpuop::cmd::AddLabelsCommand(app);
  gpuop::cmd::AddDevicePluginCommand(app);
  gpuop::cmd::AddCdiCommand(app);
  gpuop::cmd::AddRuntimeCommand(app);
  gpuop::cmd::AddHealthCommand(app);
  gpuop::cmd::AddValidateCommand(app);
  gpuop::cmd::AddExporterCommand(app);
  gpuop::cmd::AddMigCommand(app);
  gpuop::cmd::AddPowerCommand(app);
  gpuop::cmd::AddMpsDaemonCommand(app);
  gpuop::cmd::AddDriverSafeLoadCommand(app);
  using gpuop::common::AddPlannedSubcommand;
  AddPlannedSubcommand(app, "dra-plugin",
                       "Serve the kubelet DRA plugin API and publish ResourceSlices");
  // GPUOP_AGENT_CHECK_ARGS=1: parse the command line as usual (unknown flags, bad values and
  // missing options fail with the usual message) and exit 0 instead of running the component.
  // The operator's tests run every command it renders through it.
  if (std::getenv("GPUOP_AGENT_CHECK_ARGS") != nullptr) gpuop::common::OnlyCheckArguments(app);
  return gpuop::common::RunCli(app, argc, argv);
}
