// gpuop-operator: the cluster controller (one leader-elected Deployment).
#include "cmd/gpuop-operator/commands.h"
#include "common/cli.h"

int main(int argc, char** argv) {
  CLI::App app{"gpuop operator: converges every GPU node to the cluster's GPU policy.",
               "gpuop-operator"};
  app.require_subcommand(0, 1);
  gpuop::common::AddVersionFlag(app, "gpuop-operator");
  gpuop::cmd::AddRunCommand(app);
  gpuop::cmd::AddUninstallCommand(app);
  return gpuop::common::RunCli(app, argc, argv);
}
