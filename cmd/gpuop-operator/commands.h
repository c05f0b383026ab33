#ifndef GPUOP_CMD_GPUOP_OPERATOR_COMMANDS_H_
#define GPUOP_CMD_GPUOP_OPERATOR_COMMANDS_H_

#include <CLI/CLI.hpp>

// Each adds one `gpuop-operator` subcommand: its flags and the wiring of real implementations.
namespace gpuop::cmd {

void AddRunCommand(CLI::App& app);
void AddUninstallCommand(CLI::App& app);

}  // namespace gpuop::cmd

#endif  // GPUOP_CMD_GPUOP_OPERATOR_COMMANDS_H_
