// gpuop-agent validate: proves the driver, CUDA and the device plugin work on this node, and
// says so in ready files and the GPUValidated Node condition.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <thread>

#include "absl/strings/str_join.h"
#include "agent/validate/mig_cuda.h"
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

// The node's accelerators, opened again at each attempt until one answers: the validator
// usually starts before the driver container has published the driver.
class Accelerators {
 public:
  explicit Accelerators(HardwareFlags flags) : flags_(std::move(flags)) {}
  std::vector<hw::Accelerator*> Get() {
    if (open_.empty()) open_ = OpenAccelerators(flags_);
    std::vector<hw::Accelerator*> raw;
    for (auto& a : open_) raw.push_back(a.get());
    return raw;
  }

 private:
  HardwareFlags flags_;
  std::vector<std::unique_ptr<hw::Accelerator>> open_;
};

// Until every ready file of `checks` exists in `status_dir`, and every file of `files` (or
// SIGTERM): 0 when they do, 1 naming the first missing one when `wait` is false.
[[noreturn]] void Probe(const std::vector<std::string>& checks, const std::string& status_dir,
                        const std::vector<std::string>& files, bool wait) {
  if (wait) common::BlockTerminationSignals();
  std::string reported;
  while (true) {
    std::string missing;
    for (const std::string& check : checks) {
      const std::filesystem::path ready = std::filesystem::path(status_dir) / (check + "-ready");
      std::error_code ec;
      if (!std::filesystem::exists(ready, ec)) {
        missing = absl::StrCat(check, " has not passed (no ", ready.string(), ")");
        break;
      }
    }
    for (const std::string& file : files) {
      std::error_code ec;
      if (missing.empty() && !std::filesystem::exists(file, ec)) {
        missing = absl::StrCat(file, " does not exist yet");
      }
    }
    if (missing.empty()) std::exit(0);
    if (missing != reported) std::fprintf(stderr, "validate: %s\n", missing.c_str());
    std::fflush(stderr);
    reported = missing;
    if (!wait) std::exit(1);
    if (common::TerminationSignalPending(absl::Seconds(1))) std::exit(1);
  }
}

// gpuop-agent cuda-vector-add: the vector add on one CUDA device named as CUDA_VISIBLE_DEVICES
// names it (a MIG device: "MIG-<uuid>"), in this process alone; what validate runs per MIG device.
void AddCudaVectorAddCommand(CLI::App& app) {
  struct Flags {
    std::string device;
    std::string cuda_library;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "cuda-vector-add", "Run the CUDA vector add on one device (validate runs it per MIG device)");
  sub->group("");  // an internal step of validate
  sub->add_option("--device", flags->device, "The device, as CUDA_VISIBLE_DEVICES names it")
      ->required();
  sub->add_option("--cuda-library", flags->cuda_library, "libcuda to load (a path)")->required();
  sub->callback([flags] {
    (void)hw::PreloadCompanions(flags->cuda_library,
                                {std::begin(hw::kCudaCompanions), std::end(hw::kCudaCompanions)});
    absl::StatusOr<std::string> ran = agent::RunVectorAddOn(flags->device, flags->cuda_library);
    if (!ran.ok()) {
      std::fprintf(stderr, "%s\n", std::string(ran.status().message()).c_str());
      std::exit(1);
    }
    std::printf("%s\n", ran->c_str());
    std::exit(0);
  });
}

}  // namespace

void AddValidateCommand(CLI::App& app) {
  AddCudaVectorAddCommand(app);
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
    bool wait = false;
    std::vector<std::string> wait_files;
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
  sub->add_flag("--wait", flags->wait,
                "With --probe: wait until the ready files exist (an init container), exit 1 on "
                "SIGTERM");
  sub->add_option("--wait-file", flags->wait_files,
                  "With --probe: also wait for this file (repeatable), such as the CDI spec a "
                  "component's devices come from");
  sub->add_flag("--keep-running", flags->keep_running,
                "After passing, stay up until SIGTERM (a DaemonSet's main container)");
  sub->callback([flags] {
    if (flags->probe) Probe(flags->checks, flags->status_dir, flags->wait_files, flags->wait);
    common::BlockTerminationSignals();
    const std::set<std::string> wanted(flags->checks.begin(), flags->checks.end());
    if (wanted.contains("device-plugin") && flags->node_name.empty()) {
      std::fprintf(stderr,
                   "validate: the device-plugin check needs --node-name (or $NODE_NAME) to read "
                   "the Node's allocatable resources\n");
      std::exit(2);
    }
    auto accelerators = std::make_shared<Accelerators>(flags->hardware);

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
      // Each attempt checks the accelerators open then (opening them if none were yet).
      if (name == "driver") {
        checks.push_back(
            {name, [accelerators] { return agent::DriverCheck(accelerators->Get()).run(); }});
      }
      if (name == "cuda") {
        checks.push_back(
            {name, [accelerators, flags] {
               const std::string library = CudaLibrary(flags->hardware, flags->cuda_library);
               return agent::CudaCheck(
                          accelerators->Get(), {.library_path = library},
                          agent::SubprocessMigCudaRunner(
                              {"/proc/self/exe", "cuda-vector-add", "--cuda-library=" + library}))
                   .run();
             }});
      }
      if (name == "device-plugin") {
        agent::AllocatableReader allocatable = agent::NodeAllocatable(*client, flags->node_name);
        checks.push_back({name, [accelerators, allocatable] {
                            return agent::DevicePluginCheck(accelerators->Get(), allocatable).run();
                          }});
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
