// gpuop-container-runtime: the runc wrapper a containerd RuntimeClass handler names as its
// BinaryName, so that an unprivileged container gets the CDI devices its environment asks for
// (GPUOP_CDI_DEVICES, see agent/cdi/inject/inject.h). containerd's runc shim calls it exactly as it
// calls runc. For "create" and "run" it first edits the bundle's config.json; then, for every
// command, it executes the real runc (GPUOP_RUNC, or the first runc on PATH that is not this
// program, or crun where there is no runc) with the same arguments. Statically linked: it runs on
// the host, whatever the host's distribution.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include "agent/cdi/inject/find_runc.h"
#include "agent/cdi/inject/inject.h"
#include "agent/cdi/inject/runc_args.h"
#include "agent/cdi/inject/runc_log.h"

namespace inject = gpuop::agent::cdi::inject;

namespace {

constexpr char kUsage[] =
    "usage: gpuop-container-runtime <runc arguments>\n"
    "\n"
    "Runs runc with the same arguments. Before `create` and `run` it applies to the bundle's\n"
    "config.json the CDI devices the container's GPUOP_CDI_DEVICES variable names (JSON specs\n"
    "in /etc/cdi, then /var/run/cdi).\n"
    "\n"
    "environment:\n"
    "  GPUOP_RUNC           the runc to run (an absolute path); default: the first runc on PATH\n"
    "                       that is not this program, else the first crun\n"
    "  GPUOP_CDI_SPEC_DIRS  colon-separated CDI spec directories, later ones taking precedence\n";

std::optional<std::string> Env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::vector<std::string> SplitColons(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t colon = std::min(text.find(':', start), text.size());
    if (colon > start) out.push_back(text.substr(start, colon - start));
    start = colon + 1;
  }
  return out;
}

// Reports an error where containerd looks for it: stderr, and runc's JSON log when there is one.
int Fail(const inject::RuncInvocation& invocation, const std::string& error) {
  const std::string message = "gpuop-container-runtime: " + error;
  std::cerr << message << std::endl;
  if (!invocation.log_path.empty() && invocation.log_format == "json") {
    const inject::Status logged = inject::AppendToLog(
        invocation.log_path, inject::FormatRuncLogLine(message, std::time(nullptr)));
    if (!logged.ok()) std::cerr << "gpuop-container-runtime: " << logged.message() << std::endl;
  }
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  if (args.size() == 1 && args[0] == "--version") {
    std::cout << "gpuop-container-runtime " << GPUOP_VERSION << "\n";
    return 0;
  }
  if (args.size() == 1 && args[0] == "--help") {
    std::cout << kUsage;
    return 0;
  }

  const inject::RuncInvocation invocation = inject::ParseRuncArgs(args);
  if (invocation.subcommand == "create" || invocation.subcommand == "run") {
    inject::InjectOptions options;
    if (const std::optional<std::string> dirs = Env(inject::kSpecDirsEnv)) {
      options.spec_dirs = SplitColons(*dirs);
    }
    const inject::StatusOr<inject::InjectResult> result =
        inject::InjectIntoBundle(invocation.bundle, options);
    if (!result.ok()) return Fail(invocation, result.status().message());
  }

  const inject::StatusOr<inject::FileId> self = inject::SelfId();
  if (!self.ok()) return Fail(invocation, self.status().message());
  inject::StatusOr<std::string> runc = inject::FindRunc(Env(inject::kRuncEnv), Env("PATH"), *self);
  if (!runc.ok()) return Fail(invocation, runc.status().message());

  // argv[0] names the program run, as a shell would; the arguments are passed unchanged.
  std::vector<char*> runc_argv;
  runc_argv.push_back(runc->data());
  for (int i = 1; i < argc; ++i) runc_argv.push_back(argv[i]);
  runc_argv.push_back(nullptr);
  ::execv(runc->c_str(), runc_argv.data());
  return Fail(invocation, "execute " + *runc + ": " + std::strerror(errno));
}
