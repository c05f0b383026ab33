#ifndef GPUOP_CMD_GPUOP_AGENT_COMMANDS_H_
#define GPUOP_CMD_GPUOP_AGENT_COMMANDS_H_

#include <CLI/CLI.hpp>

// Each adds one `gpuop-agent` subcommand: its flags and the wiring of real implementations.
namespace gpuop::cmd {

void AddDiscoverCommand(CLI::App& app);
void AddDiscoverPciCommand(CLI::App& app);
void AddDevicePluginCommand(CLI::App& app);
void AddLabelsCommand(CLI::App& app);
void AddCdiCommand(CLI::App& app);
void AddRuntimeCommand(CLI::App& app);
void AddHealthCommand(CLI::App& app);
void AddValidateCommand(CLI::App& app);
void AddExporterCommand(CLI::App& app);
void AddMigCommand(CLI::App& app);
void AddPowerCommand(CLI::App& app);
void AddMpsDaemonCommand(CLI::App& app);
void AddDriverSafeLoadCommand(CLI::App& app);

}  // namespace gpuop::cmd

#endif  // GPUOP_CMD_GPUOP_AGENT_COMMANDS_H_
