// gpuop-agent: the per-node agent. One binary, one subcommand per node component; the operator
// runs each component as its own DaemonSet.
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
  return gpuop::common::RunCli(app, argc, argv);
}
