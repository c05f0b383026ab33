// gpuop-agent cdi generate: installs gpuop-cdi-hook on the host and writes the node's CDI specs
// (NVIDIA and AMD, and the management spec gpuop's own components get their GPUs from).
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <thread>

#include <unistd.h>

#include "agent/cdi/amd_generator.h"
#include "agent/cdi/driver_watch.h"
#include "agent/cdi/hook_install.h"
#include "agent/cdi/management.h"
#include "agent/cdi/nvidia_generator.h"
#include "agent/cdi/spec_file.h"
#include "cmd/gpuop-agent/accelerators.h"
#include "cmd/gpuop-agent/commands.h"
#include "common/file_watch.h"
#include "common/signals.h"

namespace gpuop::cmd {
namespace {

struct Flags {
  HardwareFlags hardware;
  std::string output_dir = "/var/run/cdi";
  std::string driver_root = "/";
  std::string hook_path = agent::cdi::kHookHostPath;
  std::string hook_source = agent::cdi::HookBesideSelf().string();
  std::string hook_install_dir;
  bool watch = false;
  std::string layout_file;
  int resync_seconds = 300;
  int driver_poll_seconds = 5;
};

agent::cdi::HostFiles Files(const Flags& flags) {
  const std::string& root = flags.hardware.host_root;
  return {.sysroot = root == "/" ? "" : root};
}

// Installs the hook (when there is one to install) and returns the host path the spec may name:
// the hook path when the file is there and executable, empty (a spec without hooks, whose
// containers start but lack the library links) otherwise. A spec naming a missing hook would
// fail every GPU container, so a failed install never leads to one.
std::string UsableHookPath(const Flags& flags) {
  if (flags.hook_path.empty()) return "";
  // Where this process sees the hook: the install directory when it has one (a writable mount
  // of the host's directory), else the hook path under the sysroot.
  const std::filesystem::path local = flags.hook_install_dir.empty()
                                          ? Files(flags).Open(flags.hook_path)
                                          : std::filesystem::path(flags.hook_install_dir) /
                                                std::filesystem::path(flags.hook_path).filename();
  if (!flags.hook_source.empty()) {
    absl::StatusOr<bool> installed = agent::cdi::InstallHook(flags.hook_source, local);
    if (!installed.ok()) {
      std::fprintf(stderr, "cdi: %s\n", installed.status().ToString().c_str());
    } else if (*installed) {
      std::printf("cdi: installed %s as %s\n", flags.hook_source.c_str(), flags.hook_path.c_str());
    }
  }
  if (access(local.c_str(), X_OK) != 0) {
    std::fprintf(stderr,
                 "cdi: warning: the hook %s is not there (%s); the spec has no hooks, so "
                 "containers get the driver's libraries without their SONAME links\n",
                 flags.hook_path.c_str(), local.c_str());
    return "";
  }
  return flags.hook_path;
}

// The driver root as the host sees it: `flags.driver_root`, or for "auto" /run/nvidia/driver
// when gpuop's driver container has populated it and / (a host driver) otherwise.
std::string DriverRoot(const Flags& flags) {
  if (flags.driver_root != "auto") return flags.driver_root;
  std::error_code ec;
  const std::filesystem::path container =
      std::filesystem::path(flags.hardware.host_root) / "run" / "nvidia" / "driver" / "usr";
  return std::filesystem::is_directory(container, ec) ? "/run/nvidia/driver" : "/";
}

// Where the NVIDIA device nodes are, as the host sees them: a driver container's own /dev under
// its root (the nodes it creates are not in the host's /dev; NVIDIA's toolkit takes the driver
// root as the device root there too), else --dev-root.
std::string NvidiaDevRoot(const Flags& flags) {
  const std::string driver_root = DriverRoot(flags);
  if (driver_root == "/" || flags.hardware.dev_root != "/dev") return flags.hardware.dev_root;
  return (std::filesystem::path(driver_root) / "dev").string();
}

// Writes the management spec (agent/cdi/management.h) for the vendor specs just written, with the
// MIG monitor capability where the driver has one. False (said on stderr) when it fails.
bool WriteManagementSpec(const Flags& flags, const std::vector<agent::cdi::Spec>& vendor_specs) {
  const agent::cdi::HostFiles files = Files(flags);
  std::optional<agent::cdi::DeviceNode> monitor;
  absl::StatusOr<unsigned int> minor = agent::cdi::MigMonitorMinor(files.Open("/proc"));
  if (minor.ok()) {
    agent::cdi::DeviceNode node = agent::cdi::MigMonitorNode(NvidiaDevRoot(flags), *minor);
    std::error_code ec;
    const std::string host = node.host_path.empty() ? node.path : node.host_path;
    if (std::filesystem::exists(files.Open(host), ec)) {
      monitor = std::move(node);
    } else {
      std::fprintf(stderr, "cdi: warning: the MIG monitor capability's node %s is missing\n",
                   host.c_str());
    }
  } else if (minor.status().code() != absl::StatusCode::kNotFound) {
    std::fprintf(stderr, "cdi: %s\n", minor.status().ToString().c_str());
  }
  absl::StatusOr<agent::cdi::Spec> spec = agent::cdi::ManagementSpec(vendor_specs, monitor);
  absl::StatusOr<bool> written =
      spec.ok() ? agent::cdi::WriteSpec(
                      *spec, {.dir = flags.output_dir, .name = agent::cdi::kManagementSpecFileName})
                : absl::StatusOr<bool>(spec.status());
  if (!written.ok()) {
    std::fprintf(stderr, "cdi: %s\n", written.status().ToString().c_str());
    return false;
  }
  std::printf(
      "%s/%s: %s (%s)\n", flags.output_dir.c_str(), agent::cdi::kManagementSpecFileName,
      *written ? "written" : "unchanged",
      monitor.has_value() ? "with the MIG monitor capability" : "no MIG monitor capability");
  return true;
}

// Writes every vendor's spec; returns the number of failures.
int GenerateOnce(const Flags& command_flags) {
  const Flags* flags = &command_flags;
  int failures = 0;
  const std::string hook_path = UsableHookPath(*flags);
  std::vector<agent::cdi::Spec> written_specs;
  for (auto& accelerator : OpenAccelerators(flags->hardware)) {
    absl::StatusOr<hw::Inventory> inventory = accelerator->Discover();
    if (!inventory.ok()) {
      std::fprintf(stderr, "cdi: %s\n", inventory.status().ToString().c_str());
      ++failures;
      continue;
    }
    std::unique_ptr<agent::cdi::CdiGenerator> generator;
    std::string file;
    const agent::cdi::HostFiles files = Files(*flags);
    if (accelerator->vendor() == hw::Vendor::kNvidia) {
      agent::cdi::NvidiaCdiOptions options;
      options.driver.driver_root = DriverRoot(*flags);
      options.dev_root = NvidiaDevRoot(*flags);
      options.hook_path = hook_path;
      options.files = files;
      generator = std::make_unique<agent::cdi::NvidiaCdiGenerator>(options);
      file = agent::cdi::kNvidiaSpecFileName;
    } else {
      agent::cdi::AmdCdiOptions options;
      options.dev_root = flags->hardware.dev_root;
      options.files = files;
      generator = std::make_unique<agent::cdi::AmdCdiGenerator>(options);
      file = agent::cdi::kAmdSpecFileName;
    }
    absl::StatusOr<agent::cdi::GeneratedSpec> spec = generator->Generate(*inventory);
    if (!spec.ok()) {
      std::fprintf(stderr, "cdi: %s\n", spec.status().ToString().c_str());
      ++failures;
      continue;
    }
    for (const auto& w : spec->warnings) std::fprintf(stderr, "cdi: warning: %s\n", w.c_str());
    absl::StatusOr<bool> written =
        agent::cdi::WriteSpec(spec->spec, {.dir = flags->output_dir, .name = file});
    if (!written.ok()) {
      std::fprintf(stderr, "cdi: %s\n", written.status().ToString().c_str());
      ++failures;
      continue;
    }
    std::printf("%s/%s: %s (%zu devices)\n", flags->output_dir.c_str(), file.c_str(),
                *written ? "written" : "unchanged", spec->spec.devices.size());
    written_specs.push_back(std::move(spec->spec));
  }
  if (!written_specs.empty() && !WriteManagementSpec(*flags, written_specs)) ++failures;
  return failures;
}

// Removes what `generate` wrote: gpuop's spec files in `output_dir` and the hook it installed.
// Returns the number of failures (a file already gone is none).
int RemoveOnce(const Flags& flags) {
  int failures = 0;
  std::vector<std::filesystem::path> files;
  for (const char* name : {agent::cdi::kNvidiaSpecFileName, agent::cdi::kAmdSpecFileName,
                           agent::cdi::kManagementSpecFileName}) {
    files.push_back(std::filesystem::path(flags.output_dir) / name);
  }
  if (!flags.hook_path.empty()) {
    files.push_back(flags.hook_install_dir.empty()
                        ? Files(flags).Open(flags.hook_path)
                        : std::filesystem::path(flags.hook_install_dir) /
                              std::filesystem::path(flags.hook_path).filename());
  }
  for (const std::filesystem::path& file : files) {
    std::error_code ec;
    if (std::filesystem::remove(file, ec)) {
      std::printf("cdi: removed %s\n", file.c_str());
    } else if (ec) {
      std::fprintf(stderr, "cdi: remove %s: %s\n", file.c_str(), ec.message().c_str());
      ++failures;
    }
  }
  return failures;
}

}  // namespace

void AddCdiCommand(CLI::App& app) {
  auto flags = std::make_shared<Flags>();
  CLI::App* cdi = app.add_subcommand("cdi", "CDI specs for the node's GPUs");
  CLI::App* generate = cdi->add_subcommand("generate", "Write the CDI specs (only when changed)");
  AddHardwareFlags(*generate, flags->hardware);
  generate->add_option("--output-dir", flags->output_dir, "Where specs are written")
      ->capture_default_str();
  generate
      ->add_option("--driver-root", flags->driver_root,
                   "The driver's root as the host sees it: /, /run/nvidia/driver, or auto (the "
                   "driver container's root when it is populated, else /)")
      ->capture_default_str();
  generate
      ->add_option("--hook-path", flags->hook_path,
                   "The OCI hook the spec names, as the host sees it (gpuop-cdi-hook, or "
                   "nvidia-cdi-hook with --hook-source=); empty: no hooks")
      ->capture_default_str();
  generate
      ->add_option("--hook-source", flags->hook_source,
                   "gpuop-cdi-hook in this image, copied to the hook path when it differs; "
                   "empty: install nothing")
      ->capture_default_str();
  generate->add_option("--hook-install-dir", flags->hook_install_dir,
                       "Where this process writes the hook (a mount of the hook path's directory); "
                       "default: the hook path under --host-root");
  generate->add_option("--sysroot", flags->hardware.host_root, "The same as --host-root");
  generate->add_flag("--watch", flags->watch,
                     "Keep running: regenerate when the layout changes (and every --resync)");
  generate->add_option("--layout-file", flags->layout_file,
                       "File the MIG manager rewrites after a layout change");
  generate->add_option("--resync", flags->resync_seconds, "Seconds between regenerations")
      ->capture_default_str();
  generate
      ->add_option("--driver-poll", flags->driver_poll_seconds,
                   "Seconds between looks at the driver root, its sockets and /dev (regenerates "
                   "when they change)")
      ->capture_default_str();
  CLI::App* remove = cdi->add_subcommand(
      "remove", "Remove gpuop's CDI specs and the hook generate installed (uninstall)");
  AddHardwareFlags(*remove, flags->hardware);
  remove->add_option("--output-dir", flags->output_dir, "Where the specs are")
      ->capture_default_str();
  remove->add_option("--hook-path", flags->hook_path, "The hook as the host sees it")
      ->capture_default_str();
  remove->add_option("--hook-install-dir", flags->hook_install_dir,
                     "Where this process sees the hook's directory; default: under --host-root");
  remove->callback([flags] { std::exit(RemoveOnce(*flags) == 0 ? 0 : 1); });
  cdi->require_subcommand(1);
  generate->callback([flags] {
    if (!flags->watch) std::exit(GenerateOnce(*flags) == 0 ? 0 : 1);
    common::BlockTerminationSignals();
    std::atomic<bool> stopping{false};
    std::jthread signals([&stopping] {
      common::WaitForTerminationSignal();
      stopping = true;
    });
    common::FileWatch watch;
    if (!flags->layout_file.empty()) {
      const std::filesystem::path layout(flags->layout_file);
      (void)watch.Add(layout.parent_path(), layout.filename().string());
    }
    // What the NVIDIA spec depends on in the host's files; polled, since a driver container's
    // root is replaced by a new mount, which no inotify watch on the old one would see.
    auto fingerprint = [&flags] {
      agent::cdi::DriverFilesOptions driver;
      driver.driver_root = DriverRoot(*flags);
      return agent::cdi::DriverFingerprint(Files(*flags), driver, NvidiaDevRoot(*flags));
    };
    const int poll_ticks = std::max(1, flags->driver_poll_seconds * 10);
    while (!stopping) {
      std::string seen = fingerprint();
      GenerateOnce(*flags);
      for (int waited = 0; waited < flags->resync_seconds * 10 && !stopping; ++waited) {
        if (watch.Wait(100)) break;
        if ((waited + 1) % poll_ticks == 0 && fingerprint() != seen) {
          std::printf("cdi: the driver's files changed; regenerating\n");
          break;
        }
      }
    }
    std::exit(0);
  });
}

}  // namespace gpuop::cmd
