#include "common/cli.h"

#include <cstdio>
#include <cstdlib>

#include "common/version.h"

namespace gpuop::common {

void AddVersionFlag(CLI::App& app, absl::string_view program) {
  app.add_flag_callback(
      "--version",
      [line = VersionLine(program)] {
        std::printf("%s\n", line.c_str());
        throw CLI::Success();
      },
      "Print the version and exit");
}

CLI::App* AddPlannedSubcommand(CLI::App& app, const std::string& name,
                               const std::string& description) {
  CLI::App* sub = app.add_subcommand(name, "[not implemented yet] " + description);
  sub->allow_extras();
  sub->callback([&app, name] {
    std::fprintf(stderr, "%s %s: not implemented yet\n", app.get_name().c_str(), name.c_str());
    std::exit(kExitNotImplemented);
  });
  return sub;
}

void OnlyCheckArguments(CLI::App& app) {
  // The top-level app's parse-complete callback runs once the command line passed every check
  // and before any subcommand's callback; CLI::Success ends RunCli with exit code 0. (Replacing
  // the subcommands' callbacks instead would free the flags their options write to.)
  app.parse_complete_callback([] { throw CLI::Success(); });
}

int RunCli(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (app.get_subcommands().empty()) {
    std::fputs(app.help().c_str(), stderr);
    return 2;
  }
  return 0;
}

}  // namespace gpuop::common
