// nvidia-driver: SIMULATED stand-in for the entry point of NVIDIA's driver container. See
// README.md for the contract.
//
//   nvidia-driver init   [flags]   set up, wait for SIGTERM, tear down unless in use
//   nvidia-driver uninit [flags]   tear down unless in use; stops a running init
//   nvidia-driver embed-scenario --library L --scenario S --out O [--node N] [--device-nodes D]
//
// Flags: --root, --dev-root, --driver-root, --run-dir, --lib-dir, --proc, --proc-driver, --publish
// (nvidia_driver.h). The real container's init flags -a/--accept-license and -m/--max-threads are
// accepted and ignored. Environment: GPUOP_SIMULATED_DRIVER_SCENARIO, GPUOP_SIMULATED_PROC_DRIVER,
// NODE_NAME.

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "test/fakes/driver/nvidia_driver.h"
#include "test/fakes/nvml/embedded.h"
#include "test/fakes/nvml/embedded_scenario.h"
#include "test/fakes/nvml/scenario.h"

namespace {

using gpuop::fakedriver::kExitFailed;
using gpuop::fakedriver::kExitOk;
using gpuop::fakedriver::kExitUsage;

int Usage(const std::string& why) {
  if (!why.empty()) std::fprintf(stderr, "nvidia-driver: %s\n", why.c_str());
  std::fprintf(stderr,
               "Usage: nvidia-driver COMMAND [ARG...]   (SIMULATED by gpuop)\n\n"
               "Commands:\n"
               "  init   [--root DIR] [--dev-root DIR] [--driver-root DIR] [--run-dir DIR]\n"
               "         [--lib-dir DIR] [--proc DIR] [--publish auto|rbind|tree]\n"
               "  uninit [the same flags]\n"
               "  embed-scenario --library FILE --scenario PRESET|FILE --out FILE\n"
               "         [--node NAME] [--device-nodes DIR] [--lib-dir DIR]\n");
  return kExitUsage;
}

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

// --flag value and --flag=value; `ignored` flags take no value.
bool ParseFlags(const std::vector<std::string>& args, const std::vector<std::string>& known,
                const std::vector<std::string>& ignored,
                const std::vector<std::string>& ignored_with_value,
                std::map<std::string, std::string>* out, std::string* why) {
  auto in = [](const std::vector<std::string>& list, const std::string& name) {
    for (const std::string& item : list) {
      if (item == name) return true;
    }
    return false;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i];
    std::string value;
    bool has_value = false;
    if (const size_t equals = name.find('=');
        absl::StartsWith(name, "--") && equals != std::string::npos) {
      value = name.substr(equals + 1);
      name = name.substr(0, equals);
      has_value = true;
    }
    if (in(ignored, name)) continue;
    const bool wanted = in(known, name);
    if (!wanted && !in(ignored_with_value, name)) {
      *why = absl::StrCat("unknown argument \"", args[i], "\"");
      return false;
    }
    if (!has_value) {
      if (i + 1 >= args.size()) {
        *why = absl::StrCat(name, " needs a value");
        return false;
      }
      value = args[++i];
    }
    if (wanted) (*out)[name] = value;
  }
  return true;
}

int DriverCommand(const std::string& command, const std::vector<std::string>& args) {
  std::map<std::string, std::string> flags;
  std::string why;
  if (!ParseFlags(args,
                  {"--root", "--dev-root", "--driver-root", "--run-dir", "--lib-dir", "--proc",
                   "--proc-driver", "--publish"},
                  {"-a", "--accept-license"}, {"-m", "--max-threads"}, &flags, &why)) {
    return Usage(why);
  }
  gpuop::fakedriver::Options options;
  std::string* const fields[] = {&options.root,    &options.dev_root, &options.driver_root,
                                 &options.run_dir, &options.lib_dir,  &options.proc};
  const char* const names[] = {"--root",    "--dev-root", "--driver-root",
                               "--run-dir", "--lib-dir",  "--proc"};
  for (int i = 0; i < 6; ++i) {
    if (const auto it = flags.find(names[i]); it != flags.end()) {
      if (it->second.empty() || it->second[0] != '/') {
        return Usage(
            absl::StrCat(names[i], ": expected an absolute path, got \"", it->second, "\""));
      }
      *fields[i] = it->second;
    }
  }
  if (const auto it = flags.find("--publish"); it != flags.end()) {
    if (it->second == "auto") {
      options.publish = gpuop::fakedriver::Publish::kAuto;
    } else if (it->second == "rbind") {
      options.publish = gpuop::fakedriver::Publish::kRbind;
    } else if (it->second == "tree") {
      options.publish = gpuop::fakedriver::Publish::kTree;
    } else {
      return Usage(
          absl::StrCat("--publish: expected auto, rbind or tree, got \"", it->second, "\""));
    }
  }
  options.scenario = Env("GPUOP_SIMULATED_DRIVER_SCENARIO");
  options.proc_driver = Env("GPUOP_SIMULATED_PROC_DRIVER");
  if (const auto it = flags.find("--proc-driver"); it != flags.end()) {
    options.proc_driver = it->second;
  }
  if (!options.proc_driver.empty() && options.proc_driver[0] != '/') {
    return Usage(absl::StrCat("--proc-driver: expected an absolute path, got \"",
                              options.proc_driver, "\""));
  }
  options.node_name = Env("NODE_NAME");
  return command == "init" ? gpuop::fakedriver::RunInit(options)
                           : gpuop::fakedriver::RunUninit(options);
}

int EmbedCommand(const std::vector<std::string>& args) {
  std::map<std::string, std::string> flags;
  std::string why;
  if (!ParseFlags(args,
                  {"--library", "--scenario", "--out", "--node", "--device-nodes", "--lib-dir"}, {},
                  {}, &flags, &why)) {
    return Usage(why);
  }
  for (const char* required : {"--library", "--scenario", "--out"}) {
    if (flags[required].empty()) return Usage(absl::StrCat(required, " is required"));
  }
  std::string lib_dir = flags["--lib-dir"];
  if (lib_dir.empty()) {
    const std::string& library = flags["--library"];
    const size_t slash = library.rfind('/');
    lib_dir = slash == std::string::npos ? "." : library.substr(0, slash);
  }
  absl::StatusOr<std::string> path =
      gpuop::fakedriver::ResolveScenario(flags["--scenario"], lib_dir);
  if (!path.ok()) return Usage(std::string(path.status().message()));
  FILE* file = std::fopen(path->c_str(), "rb");
  if (file == nullptr) {
    std::fprintf(stderr, "nvidia-driver: read %s: cannot open the file\n", path->c_str());
    return kExitFailed;
  }
  std::string text;
  char buffer[4096];
  while (const size_t got = std::fread(buffer, 1, sizeof(buffer), file)) text.append(buffer, got);
  std::fclose(file);
  absl::StatusOr<std::string> embedded =
      gpuop::fakenvml::MakeEmbeddedScenario(text, *path, flags["--node"], flags["--device-nodes"]);
  if (!embedded.ok()) {
    std::fprintf(stderr, "nvidia-driver: %s\n", std::string(embedded.status().message()).c_str());
    return kExitFailed;
  }
  const absl::Status written =
      gpuop::fakenvml::WriteLibraryWithScenario(flags["--library"], *embedded, flags["--out"]);
  if (!written.ok()) {
    std::fprintf(stderr, "nvidia-driver: %s\n", std::string(written.message()).c_str());
    return kExitFailed;
  }
  std::printf("Wrote %s: %s with scenario %s embedded\n", flags["--out"].c_str(),
              flags["--library"].c_str(), path->c_str());
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc < 2) return Usage("");
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "init" || command == "uninit") return DriverCommand(command, args);
  if (command == "embed-scenario") return EmbedCommand(args);
  return Usage(absl::StrCat("unknown command \"", command, "\""));
}
