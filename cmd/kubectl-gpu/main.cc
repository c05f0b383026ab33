// kubectl-gpu: the kubectl plugin ("kubectl gpu ...") for the GPU fleet.
#include "common/cli.h"

int main(int argc, char** argv) {
  CLI::App app{"kubectl gpu: the state of a cluster's GPU fleet.", "kubectl-gpu"};
  app.require_subcommand(0, 1);
  gpuop::common::AddVersionFlag(app, "kubectl-gpu");
  using gpuop::common::AddPlannedSubcommand;
  AddPlannedSubcommand(app, "status", "Fleet status at a glance");
  AddPlannedSubcommand(app, "node", "Details of one GPU node");
  AddPlannedSubcommand(app, "upgrade", "Progress of a rolling driver upgrade");
  AddPlannedSubcommand(app, "health", "Health history of GPUs");
  return gpuop::common::RunCli(app, argc, argv);
}
