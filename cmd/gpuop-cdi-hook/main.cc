// gpuop-cdi-hook: the OCI hook gpuop's CDI spec names (see agent/cdi/hook/hook.h). Statically
// linked: the container runtime runs it on the host, whatever the host's distribution.
#include <iostream>
#include <string>
#include <vector>

#include "agent/cdi/hook/hook.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  if (!args.empty() && args[0] == "--version") {
    std::cout << "gpuop-cdi-hook " << GPUOP_VERSION << "\n";
    return 0;
  }
  gpuop::agent::cdi::hook::HookEnvironment env;
  env.state = &std::cin;
  env.log = &std::cerr;
  return gpuop::agent::cdi::hook::RunHook(args, env);
}
