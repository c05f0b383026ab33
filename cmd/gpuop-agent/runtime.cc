// gpuop-agent runtime configure|unconfigure|status|detect: the container runtime's CDI settings
// and runtime handlers (gpuop's own, NVIDIA's).
#include <cstdio>

#include "agent/runtime/configurator.h"
#include "agent/runtime/containerd_version.h"
#include "agent/runtime/detect.h"
#include "agent/runtime/gpuop_runtime.h"
#include "agent/runtime/restart.h"
#include "cmd/gpuop-agent/commands.h"
#include "common/files.h"
#include "common/signals.h"

namespace gpuop::cmd {
namespace {

struct RuntimeFlags {
  std::string host_root = "/";
  std::string runtime;  // empty: detect
  agent::runtime::Options options;
  bool force = false;
  bool keep_running = false;
  std::string restart_mode = "auto";
};

[[noreturn]] void Fail(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "runtime %s: %s\n", what.c_str(), status.ToString().c_str());
  std::exit(1);
}

agent::runtime::Runtime Choose(const RuntimeFlags& flags) {
  if (!flags.runtime.empty()) {
    absl::StatusOr<agent::runtime::Runtime> runtime = agent::runtime::ParseRuntime(flags.runtime);
    if (!runtime.ok()) Fail("--runtime", runtime.status());
    return *runtime;
  }
  absl::StatusOr<agent::runtime::Detection> detection =
      agent::runtime::DetectRuntime(flags.host_root);
  if (!detection.ok()) Fail("detect", detection.status());
  if (!detection->runtime.has_value()) {
    Fail("detect", absl::FailedPreconditionError(detection->reason));
  }
  return *detection->runtime;
}

// The options with what only the running runtime can tell: for containerd, its major version.
// Unknown when containerd does not answer (it may be down): the renderers then write what every
// version reads, or refuse.
agent::runtime::Options ForRuntime(const RuntimeFlags& flags, agent::runtime::Runtime runtime) {
  agent::runtime::Options options = flags.options;
  if (runtime != agent::runtime::Runtime::kContainerd || options.containerd_major != 0) {
    return options;
  }
  absl::StatusOr<int> major = agent::runtime::HostContainerdMajor(flags.host_root);
  if (major.ok()) {
    options.containerd_major = *major;
  } else {
    std::fprintf(stderr, "runtime: containerd's version is unknown: %s\n",
                 std::string(major.status().message()).c_str());
  }
  return options;
}

}  // namespace

void AddRuntimeCommand(CLI::App& app) {
  auto flags = std::make_shared<RuntimeFlags>();
  CLI::App* runtime = app.add_subcommand(
      "runtime",
      "Configure containerd, CRI-O or Docker for CDI and the gpuop and NVIDIA runtime handlers");
  runtime->require_subcommand(1);
  auto common_flags = [flags](CLI::App* sub) {
    sub->add_option("--host-root", flags->host_root, "Where the host's root is mounted")
        ->capture_default_str();
    sub->add_option("--runtime", flags->runtime, "containerd, crio or docker (detected if unset)");
    sub->add_flag("--nvidia-runtime", flags->options.add_nvidia_runtime,
                  "Also define the nvidia runtime handler, when its binary is on the host (a "
                  "handler the runtime already has is kept as it is)");
    sub->add_option("--nvidia-runtime-binary", flags->options.runtime_binary,
                    "The NVIDIA container runtime binary as the host sees it (default: the first "
                    "of /usr/bin, /usr/local/nvidia/toolkit, /usr/local/bin "
                    "nvidia-container-runtime found under --host-root)");
    sub->add_flag("--gpuop-runtime", flags->options.add_gpuop_runtime,
                  "Also define gpuop's runtime handler `gpuop`: configure installs "
                  "gpuop-container-runtime from beside this program to "
                  "/var/lib/gpuop/bin under --host-root first, unconfigure removes it last");
    sub->add_flag("--set-as-default", flags->options.set_as_default,
                  "Make the nvidia handler the default, where there is one");
    sub->add_option("--containerd-major", flags->options.containerd_major,
                    "containerd's major version (default: asked from the running containerd "
                    "through its socket under --host-root)")
        ->check(CLI::Range(1, 99));
    sub->add_option("--restart-mode", flags->restart_mode,
                    "How containerd or CRI-O loads a changed configuration: systemd (systemctl "
                    "restart), signal (SIGHUP to containerd, which exits for its supervisor to "
                    "start it again), none, or auto (systemd where the host booted with it, else "
                    "signal)")
        ->check(CLI::IsMember({"auto", "systemd", "signal", "none"}))
        ->capture_default_str();
  };
  CLI::App* configure = runtime->add_subcommand("configure", "Apply gpuop's settings");
  CLI::App* unconfigure =
      runtime->add_subcommand("unconfigure", "Restore the runtime's configuration byte for byte");
  CLI::App* status = runtime->add_subcommand("status", "Show whether the settings are in place");
  for (CLI::App* sub : {configure, unconfigure, status}) common_flags(sub);
  unconfigure->add_flag("--force", flags->force, "Restore even files changed since configure");
  configure->add_flag("--keep-running", flags->keep_running,
                      "After configuring, stay up until SIGTERM (a DaemonSet's main container); "
                      "the settings stay in place when it stops");

  auto restarter = [flags] {
    static agent::runtime::SubprocessRunner runner;
    static agent::runtime::KillSignaller signaller;
    agent::runtime::RestartOptions options{.host_root = flags->host_root};
    absl::StatusOr<agent::runtime::RestartMode> mode =
        agent::runtime::ParseRestartMode(flags->restart_mode);
    if (!mode.ok()) Fail("--restart-mode", mode.status());
    options.containerd = *mode;
    // CRI-O takes no signal (its SIGHUP reloads only part of the configuration).
    if (*mode != agent::runtime::RestartMode::kSignal) options.crio = *mode;
    if (absl::Status valid = agent::runtime::ValidateRestartOptions(options); !valid.ok()) {
      Fail("--restart-mode", valid);
    }
    return std::make_unique<agent::runtime::HostRestarter>(options, runner, signaller);
  };
  configure->callback([flags, restarter] {
    if (flags->keep_running) common::BlockTerminationSignals();
    auto r = restarter();
    agent::runtime::Configurator configurator(flags->host_root, *r);
    const agent::runtime::Runtime chosen = Choose(*flags);
    if (flags->options.add_gpuop_runtime) {
      const std::filesystem::path source = common::BesideSelf(agent::runtime::kGpuopRuntimeProgram);
      absl::StatusOr<bool> installed = agent::runtime::InstallGpuopRuntime(
          agent::runtime::HostFiles(flags->host_root), source, flags->options);
      if (!installed.ok()) Fail("configure", installed.status());
      if (*installed) {
        std::printf("runtime: installed %s as %s\n", source.c_str(),
                    flags->options.gpuop_runtime_binary.c_str());
      }
    }
    auto report = configurator.Configure(chosen, ForRuntime(*flags, chosen));
    if (!report.ok()) Fail("configure", report.status());
    std::printf("%s\n", report->Summary().c_str());
    std::fflush(stdout);
    if (flags->keep_running) common::WaitForTerminationSignal();
  });
  unconfigure->callback([flags, restarter] {
    auto r = restarter();
    agent::runtime::Configurator configurator(flags->host_root, *r);
    const agent::runtime::Runtime chosen = Choose(*flags);
    auto report = configurator.Unconfigure(chosen, ForRuntime(*flags, chosen), flags->force);
    if (!report.ok()) Fail("unconfigure", report.status());
    std::printf("%s\n", report->Summary().c_str());
    // Only once no configuration names it any more.
    if (flags->options.add_gpuop_runtime) {
      absl::StatusOr<bool> removed = agent::runtime::RemoveGpuopRuntime(
          agent::runtime::HostFiles(flags->host_root), flags->options);
      if (!removed.ok()) Fail("unconfigure", removed.status());
      if (*removed) {
        std::printf("runtime: removed %s\n", flags->options.gpuop_runtime_binary.c_str());
      }
    }
  });
  status->callback([flags, restarter] {
    auto r = restarter();
    agent::runtime::Configurator configurator(flags->host_root, *r);
    const agent::runtime::Runtime chosen = Choose(*flags);
    auto report = configurator.Status(chosen, ForRuntime(*flags, chosen));
    if (!report.ok()) Fail("status", report.status());
    std::printf("%s\n", report->Summary().c_str());
  });
}

}  // namespace gpuop::cmd
