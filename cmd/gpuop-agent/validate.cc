// gpuop-agent validate: proves the driver, CUDA and the device plugin work on this node, and
// says so in ready files and the GPUValidated Node condition.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <thread>

#include "absl/strings/str_join.h"
#include "agent/validate/node_writer.h"
#include "agent/validate/validator.h"
#include "cmd/gpuop-agent/accelerators.h"
#include "cmd/gpuop-agent/commands.h"
#include "common/signals.h"
#include "hw/nvml/driver_library.h"

namespace gpuop::cmd {

namespace {

bool Report(const absl::Status& written) {
  if (!written.ok())
    std::fprintf(stderr, "validate: Node condition: %s\n", written.ToString().c_str());
  return written.ok();
}

// libcuda for `flag`, with the driver libraries it opens by soname already loaded from its own
// directory (a host's or driver container's libcuda is not on this process's library path).
std::string CudaLibrary(const HardwareFlags& hardware, const std::string& flag) {
  const std::string library = hardware.Library(flag, hw::kCudaSoname);
  (void)hw::PreloadCompanions(library,
                              {std::begin(hw::kCudaCompanions), std::end(hw::kCudaCompanions)});
  return library;
}

}  // namespace

void AddValidateCommand(CLI::App& app) {
  struct Flags {
    HardwareFlags hardware;
    std::vector<std::string> checks = {"driver", "cuda", "device-plugin"};
    std::string node_name;
    std::string kubeconfig;
    std::string status_dir = "/run/gpuop/validations";
    std::string cuda_library = "auto";
    int timeout_seconds = 1800;
    bool keep_running = false;
    bool probe = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "validate", "Prove the driver, CUDA and the device plugin work; retried with backoff");
  AddHardwareFlags(*sub, flags->hardware);
  sub->add_option("--checks", flags->checks, "Checks to run, in order")
      ->delimiter(',')
      ->check(CLI::IsMember({"driver", "cuda", "device-plugin"}))
      ->capture_default_str();
  AddNodeNameFlag(*sub, flags->node_name,
                  "gets the GPUValidated condition; the device-plugin check reads its "
                  "allocatable resources");
  sub->add_option("--kubeconfig", flags->kubeconfig, "Kubeconfig; in-cluster when unset");
  sub->add_option("--status-dir", flags->status_dir,
                  "Where <check>-ready files tell init containers a check passed (empty: none)")
      ->capture_default_str();
  sub->add_option("--cuda-library", flags->cuda_library,
                  "libcuda to load: auto (found like --nvml-library) or a path")
      ->capture_default_str();
  sub->add_option("--timeout", flags->timeout_seconds,
                  "Seconds before a check that keeps failing fails the run (0: retry forever)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_flag("--probe", flags->probe,
                "Only check that the ready files of --checks exist (a readiness probe): exit 0 "
                "when they all do, 1 naming the first missing one");
  sub->add_flag("--keep-running", flags->keep_running,
                "After passing, stay up until SIGTERM (a DaemonSet's main container)");
  sub->callback([flags] {
    if (flags->probe) {
      for (const std::string& check : flags->checks) {
        const std::filesystem::path ready =
            std::filesystem::path(flags->status_dir) / (check + "-ready");
        std::error_code ec;
        if (!std::filesystem::exists(ready, ec)) {
          std::fprintf(stderr, "validate: %s has not passed (no %s)\n", check.c_str(),
                       ready.c_str());
          std::exit(1);
        }
      }
      std::exit(0);
    }
    common::BlockTerminationSignals();
    const std::set<std::string> wanted(flags->checks.begin(), flags->checks.end());
    if (wanted.contains("device-plugin") && flags->node_name.empty()) {
      std::fprintf(stderr,
                   "validate: the device-plugin check needs --node-name (or $NODE_NAME) to read "
                   "the Node's allocatable resources\n");
      std::exit(2);
    }
    auto accelerators = OpenAccelerators(flags->hardware);
    std::vector<hw::Accelerator*> raw;
    for (auto& a : accelerators) raw.push_back(a.get());

    std::unique_ptr<kube::Client> client;
    std::unique_ptr<agent::NodeValidationWriter> writer;
    if (!flags->node_name.empty()) {
      absl::StatusOr<std::unique_ptr<kube::Client>> made =
          MakeClient(flags->kubeconfig, "agent-validate");
      if (!made.ok()) {
        std::fprintf(stderr, "validate: %s\n", made.status().ToString().c_str());
        std::exit(1);
      }
      client = *std::move(made);
      writer = std::make_unique<agent::NodeValidationWriter>(*client, flags->node_name);
    }
    std::vector<agent::ValidationCheck> checks;
    for (const std::string& name : flags->checks) {
      if (name == "driver") checks.push_back(agent::DriverCheck(raw));
      if (name == "cuda") {
        checks.push_back(agent::CudaCheck(
            raw, {.library_path = CudaLibrary(flags->hardware, flags->cuda_library)}));
      }
      if (name == "device-plugin") {
        checks.push_back(
            agent::DevicePluginCheck(raw, agent::NodeAllocatable(*client, flags->node_name)));
      }
    }
    bool written = true;
    agent::Validator validator(
        std::move(checks),
        {.timeout = flags->timeout_seconds == 0 ? absl::InfiniteDuration()
                                                : absl::Seconds(flags->timeout_seconds),
         .status_dir = flags->status_dir},
        [&](const agent::ValidationState& state) {
          // The check just attempted is the last one that is not pending.
          const agent::CheckState* latest = nullptr;
          for (const auto& c : state.checks) {
            if (c.phase != agent::CheckState::Phase::kPending) latest = &c;
          }
          if (latest != nullptr) {
            std::fprintf(
                stderr, "validate: %s: %s%s\n", latest->name.c_str(),
                latest->phase == agent::CheckState::Phase::kPassed ? "passed: " : "failed: ",
                latest->detail.c_str());
          }
          if (writer) written = Report(writer->Write(state));
        });
    // SIGTERM stops the run between attempts.
    std::stop_source stop;
    std::jthread signals([&stop] {
      common::WaitForTerminationSignal();
      stop.request_stop();
    });
    const absl::Status result = validator.Run(stop.get_token());
    // The last state must reach the Node: the operator acts on it.
    for (int attempt = 0; writer && !written && attempt < 6 && !stop.stop_requested(); ++attempt) {
      absl::SleepFor(absl::Seconds(1 << attempt));
      written = Report(writer->Write(validator.state()));
    }
    if (!result.ok()) {
      std::fprintf(stderr, "validate: %s\n", result.ToString().c_str());
      std::exit(result.code() == absl::StatusCode::kCancelled ? 0 : 1);
    }
    std::fprintf(stderr, "validate: all checks passed (%s)\n",
                 absl::StrJoin(flags->checks, ", ").c_str());
    if (!flags->keep_running) std::exit(0);
    signals.join();
  });
}

}  // namespace gpuop::cmd
