#ifndef GPUOP_COMMON_CLI_H_
#define GPUOP_COMMON_CLI_H_

#include <string>

#include <CLI/CLI.hpp>

#include "absl/strings/string_view.h"

namespace gpuop::common {

// Exit code of a subcommand that exists in the interface but is not built yet.
inline constexpr int kExitNotImplemented = 3;

// Adds `--version` (prints VersionLine(program) and exits 0) to `app`.
void AddVersionFlag(CLI::App& app, absl::string_view program);

// Adds a subcommand that is planned but not implemented: `--help` marks it
// "[not implemented yet]", and running it prints that plainly and exits kExitNotImplemented.
CLI::App* AddPlannedSubcommand(CLI::App& app, const std::string& name,
                               const std::string& description);

// Parses argv and runs the selected subcommand. Returns the process exit code.
int RunCli(CLI::App& app, int argc, char** argv);

// Makes RunCli only check a command line and exit 0 without running the selected subcommand:
// what a deployment passes is refused exactly as it would be at start.
void OnlyCheckArguments(CLI::App& app);

}  // namespace gpuop::common

#endif  // GPUOP_COMMON_CLI_H_
