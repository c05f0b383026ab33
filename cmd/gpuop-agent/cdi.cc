// gpuop-agent cdi generate: writes the node's CDI specs (NVIDIA and AMD).
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "agent/cdi/amd_generator.h"
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
  std::string hook_path;
  bool watch = false;
  std::string layout_file;
  int resync_seconds = 300;
};

// The driver root as the host sees it: `flags.driver_root`, or for "auto" /run/nvidia/driver
// when gpuop's driver container has populated it and / (a host driver) otherwise.
std::string DriverRoot(const Flags& flags) {
  if (flags.driver_root != "auto") return flags.driver_root;
  std::error_code ec;
  const std::filesystem::path container =
      std::filesystem::path(flags.hardware.host_root) / "run" / "nvidia" / "driver" / "usr";
  return std::filesystem::is_directory(container, ec) ? "/run/nvidia/driver" : "/";
}

// Writes every vendor's spec; returns the number of failures.
int GenerateOnce(const Flags& command_flags) {
  const Flags* flags = &command_flags;
  int failures = 0;
  for (auto& accelerator : OpenAccelerators(flags->hardware)) {
    absl::StatusOr<hw::Inventory> inventory = accelerator->Discover();
    if (!inventory.ok()) {
      std::fprintf(stderr, "cdi: %s\n", inventory.status().ToString().c_str());
      ++failures;
      continue;
    }
    std::unique_ptr<agent::cdi::CdiGenerator> generator;
    std::string file;
    const std::string& host_root = flags->hardware.host_root;
    agent::cdi::HostFiles files{.sysroot = host_root == "/" ? "" : host_root};
    if (accelerator->vendor() == hw::Vendor::kNvidia) {
      agent::cdi::NvidiaCdiOptions options;
      options.driver.driver_root = DriverRoot(*flags);
      options.dev_root = flags->hardware.dev_root;
      options.hook_path = flags->hook_path;
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
  generate->add_option("--hook-path", flags->hook_path, "nvidia-cdi-hook on the host (optional)");
  generate->add_option("--sysroot", flags->hardware.host_root, "The same as --host-root");
  generate->add_flag("--watch", flags->watch,
                     "Keep running: regenerate when the layout changes (and every --resync)");
  generate->add_option("--layout-file", flags->layout_file,
                       "File the MIG manager rewrites after a layout change");
  generate->add_option("--resync", flags->resync_seconds, "Seconds between regenerations")
      ->capture_default_str();
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
    while (!stopping) {
      GenerateOnce(*flags);
      for (int waited = 0; waited < flags->resync_seconds * 10 && !stopping; ++waited) {
        if (watch.Wait(100)) break;
      }
    }
    std::exit(0);
  });
}

}  // namespace gpuop::cmd
