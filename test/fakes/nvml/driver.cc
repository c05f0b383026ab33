#include "test/fakes/nvml/driver.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "test/fakes/nvml/device_nodes.h"
#include "test/fakes/nvml/embedded.h"
#include "test/fakes/nvml/mig.h"

namespace gpuop::fakenvml {
namespace {

using SteadyClock = std::chrono::steady_clock;

// How often a waiting nvmlEventSetWait_v2 looks at the control file.
constexpr auto kControlPoll = std::chrono::milliseconds(10);

// Any object in this library; dladdr finds the library's path from its address.
const char kAnchor = 0;

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

// The file this library was loaded from, as the process named it.
std::string LibraryPath() {
  Dl_info info{};
  if (dladdr(&kAnchor, &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

// The directory this library was loaded from.
std::string LibraryDir() {
  const std::string path = LibraryPath();
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// SIMULATED: where the driver's knowledge of the node's processes comes from. The real driver
// counts every process on the node that has a GPU open (a MIG mode change stays pending, a reset
// is refused); a container without the host's PID namespace sees only its own processes in its
// /proc. A library installed in a driver root (<root>/usr/lib/x86_64-linux-gnu, the simulated
// driver container's, which shares the host's PID namespace) reads that root's /proc when it has
// one; anything else reads this process's /proc.
std::string NodeProc() {
  const std::string dir = LibraryDir();
  absl::string_view root = dir;
  if (absl::ConsumeSuffix(&root, "/usr/lib/x86_64-linux-gnu") && !root.empty()) {
    const std::string proc = absl::StrCat(root, "/proc");
    struct stat self {};
    if (lstat(absl::StrCat(proc, "/self").c_str(), &self) == 0) return proc;
  }
  return "/proc";
}

absl::StatusOr<std::string> ScenarioPath(const std::string& value) {
  if (absl::StrContains(value, '/') || absl::EndsWith(value, ".yaml") ||
      absl::EndsWith(value, ".yml")) {
    return value;
  }
  const std::string preset = absl::StrCat(LibraryDir(), "/scenarios/", value, ".yaml");
  if (access(preset.c_str(), R_OK) != 0) {
    return absl::NotFoundError(absl::StrCat("GPUOP_FAKE_NVML_SCENARIO: no preset \"", value,
                                            "\" (looked for ", preset, ")"));
  }
  return preset;
}

// A scenario's module_device_nodes as an absolute path: relative ones are taken from the
// directory this library was loaded from.
std::string ModuleDir(const std::string& value) {
  if (value.empty() || absl::StartsWith(value, "/")) return value;
  return absl::StrCat(LibraryDir(), "/", value);
}

}  // namespace

Driver& Driver::Get() {
  // A static object rather than a leaked pointer: consumers dlclose the library, and the driver
  // must go with it instead of lingering as unreachable memory.
  static Driver driver;
  return driver;
}

absl::StatusOr<Scenario> Driver::LoadScenario(std::string* origin) {
  const std::string configured = Env("GPUOP_FAKE_NVML_SCENARIO");
  if (!configured.empty()) {
    GPUOP_ASSIGN_OR_RETURN(*origin, ScenarioPath(configured));
    return LoadScenarioFile(*origin, Env("GPUOP_FAKE_NVML_NODE"));
  }
  const std::string library = LibraryPath();
  absl::StatusOr<std::optional<std::string>> embedded = std::optional<std::string>();
  if (!library.empty()) embedded = ReadEmbeddedScenario(library);
  if (!embedded.ok()) return embedded.status();
  if (!embedded->has_value()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "GPUOP_FAKE_NVML_SCENARIO is not set and ", library.empty() ? "the library" : library,
        " carries no embedded scenario: name a preset (h100-8x-nvswitch, a100-8x-mig, "
        "l4-4x-pcie, no-gpus) or a scenario file"));
  }
  // The embedded scenario fixes the node's identity: every process sees the same GPUs.
  *origin = absl::StrCat(library, " (embedded scenario)");
  absl::StatusOr<Scenario> scenario = ParseScenario(**embedded, *origin, "");
  if (!scenario.ok()) {
    return absl::Status(scenario.status().code(),
                        absl::StrCat("scenario ", *origin, ": ", scenario.status().message()));
  }
  return scenario;
}

absl::StatusOr<std::unique_ptr<Machine>> Driver::Load() {
  const std::string scale = Env("GPUOP_FAKE_NVML_TIME_SCALE");
  time_scale_ = 1;
  if (!scale.empty() &&
      (!absl::SimpleAtod(scale, &time_scale_) || !std::isfinite(time_scale_) || time_scale_ < 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("GPUOP_FAKE_NVML_TIME_SCALE: expected a number >= 0, got \"", scale, "\""));
  }
  std::string origin;
  GPUOP_ASSIGN_OR_RETURN(Scenario scenario, LoadScenario(&origin));
  Machine::MigAccess mig_access;  // a root process on the host: both
  device_nodes_dir_ = scenario.device_nodes;
  if (!scenario.device_nodes.empty()) {
    GPUOP_ASSIGN_OR_RETURN(OpenedNodes nodes,
                           OpenDeviceNodes(scenario.device_nodes, scenario.gpus,
                                           ModuleDir(scenario.module_device_nodes)));
    device_fds_ = std::move(nodes.fds);
    scenario = VisibleSubset(scenario, nodes.visible);
    mig_access = {.monitor = nodes.mig_monitor, .config = nodes.mig_config};
  }
  absl::StatusOr<std::unique_ptr<Machine>> machine = Machine::Create(std::move(scenario));
  if (!machine.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("scenario ", origin, ": ", machine.status().message()));
  }
  (*machine)->set_mig_access(mig_access);
  (*machine)->set_node_proc(NodeProc());
  std::string control = Env("GPUOP_FAKE_NVML_CONTROL");
  // A library carrying its node's scenario (the simulated driver's) follows that node's control
  // file beside it, so that one line reaches every process on the node, as a hardware event
  // reaches every NVML client. The simulated driver empties it when it loads.
  if (control.empty() && absl::StrContains(origin, "(embedded scenario)")) {
    control = absl::StrCat(LibraryDir(), "/", kNodeControlFile);
  }
  control_.reset();
  if (!control.empty()) control_.emplace(control);
  // The node's MIG state outlives processes as the kernel driver's does: in a file every process
  // of the node shares. Without one, it stays in this process (and goes with the last shutdown).
  std::string state = Env("GPUOP_FAKE_NVML_STATE");
  if (state.empty() && absl::StrContains(origin, "(embedded scenario)")) {
    state = absl::StrCat(LibraryDir(), "/", kNodeStateFile);
  }
  node_state_.reset();
  if (!state.empty()) node_state_.emplace(state);
  (*machine)->set_shared_mig_state(node_state_.has_value());
  return machine;
}

nvmlReturn_t Driver::Init() {
  std::lock_guard lock(mu_);
  if (refcount_ > 0) {
    ++refcount_;
    return NVML_SUCCESS;
  }
  absl::StatusOr<std::unique_ptr<Machine>> machine = Load();
  if (!machine.ok()) {
    const std::string reason(machine.status().message());
    if (reason != last_failure_) {
      std::fprintf(stderr, "gpuop fake NVML: nvmlInit_v2: %s\n", reason.c_str());
      last_failure_ = reason;
    }
    control_.reset();
    node_state_.reset();
    CloseDeviceNodes(device_fds_);
    return machine.status().code() == absl::StatusCode::kPermissionDenied
               ? NVML_ERROR_NO_PERMISSION
               : NVML_ERROR_DRIVER_NOT_LOADED;
  }
  last_failure_.clear();
  machine_ = *std::move(machine);
  started_ = SteadyClock::now();
  advanced_ms_ = 0;
  refcount_ = 1;
  SyncLocked();
  CreateInstanceCapNodesLocked();
  return NVML_SUCCESS;
}

void Driver::CreateInstanceCapNodesLocked() {
  if (device_nodes_dir_.empty()) return;
  std::vector<InstanceCaps> instances;
  for (unsigned int g = 0; g < machine_->gpu_count(); ++g) {
    const GpuState& gpu = machine_->gpu(g);
    if (!gpu.mig_enabled) continue;
    for (const auto& gi : gpu.gpu_instances) {
      for (const auto& ci : gi->computes) {
        instances.push_back({gpu.spec.minor_number, gi->id, ci->id});
      }
    }
  }
  CreateInstanceCapNodes(device_nodes_dir_, instances);
}

nvmlReturn_t Driver::Shutdown() {
  std::lock_guard lock(mu_);
  if (refcount_ == 0) return NVML_ERROR_UNINITIALIZED;
  if (--refcount_ == 0) {
    machine_.reset();
    control_.reset();
    node_state_.reset();
    CloseDeviceNodes(device_fds_);
    ++generation_;
    cv_.notify_all();
  }
  return NVML_SUCCESS;
}

int64_t Driver::NowMsLocked() const {
  const double real_ms =
      std::chrono::duration<double, std::milli>(SteadyClock::now() - started_).count();
  return advanced_ms_ + static_cast<int64_t>(real_ms * time_scale_);
}

void Driver::ReportNodeStateLocked(const absl::Status& problem) {
  const std::string text(problem.message());
  if (!reported_.insert(text).second) return;
  std::fprintf(stderr,
               "gpuop fake NVML: node MIG state: %s (MIG changes made here stay in this process)\n",
               text.c_str());
}

void Driver::AdoptNodeStateLocked(const NodeMigState& state) {
  for (unsigned int i = 0; i < machine_->gpu_count(); ++i) {
    GpuState& gpu = machine_->gpu(i);
    const auto entry = state.find(gpu.spec.uuid);
    if (entry == state.end() || entry->second == MigRecordOf(gpu)) continue;
    if (absl::Status adopted = AdoptMigRecord(gpu, entry->second, machine_->handles());
        !adopted.ok()) {
      ReportNodeStateLocked(absl::InvalidArgumentError(
          absl::StrCat(node_state_->path(), ": ", gpu.spec.uuid, ": ", adopted.message())));
    }
  }
}

void Driver::PollNodeStateLocked() {
  if (!node_state_) return;
  std::optional<absl::StatusOr<NodeMigState>> changed = node_state_->ReadIfChanged();
  if (!changed.has_value()) return;
  if (!changed->ok()) {
    ReportNodeStateLocked(changed->status());
    return;
  }
  AdoptNodeStateLocked(**changed);
}

nvmlReturn_t Driver::ChangeMigLocked(absl::FunctionRef<nvmlReturn_t()> change) {
  if (!node_state_) return change();
  absl::StatusOr<NodeStateFile::Lock> lock = node_state_->LockExclusive();
  std::optional<NodeMigState> state;
  if (!lock.ok()) {
    ReportNodeStateLocked(lock.status());
  } else if (absl::StatusOr<NodeMigState> read = node_state_->Read(); !read.ok()) {
    // Not overwritten: what cannot be parsed here may be another writer's.
    ReportNodeStateLocked(read.status());
  } else {
    state = *std::move(read);
    AdoptNodeStateLocked(*state);
  }
  std::vector<GpuMigRecord> before;
  for (unsigned int i = 0; i < machine_->gpu_count(); ++i) {
    before.push_back(MigRecordOf(machine_->gpu(i)));
  }
  const nvmlReturn_t result = change();
  if (!state.has_value()) return result;
  bool changed = false;
  for (unsigned int i = 0; i < machine_->gpu_count(); ++i) {
    const GpuState& gpu = machine_->gpu(i);
    GpuMigRecord after = MigRecordOf(gpu);
    if (after == before[i]) continue;
    (*state)[gpu.spec.uuid] = std::move(after);
    changed = true;
  }
  if (changed) {
    if (absl::Status written = node_state_->Write(*state); !written.ok()) {
      ReportNodeStateLocked(written);
    }
  }
  return result;
}

void Driver::SyncLocked() {
  PollNodeStateLocked();
  if (control_) {
    for (const auto& [number, line] : control_->ReadNewLines()) {
      absl::StatusOr<std::optional<ControlCommand>> command = ParseControlLine(line);
      std::string why;
      if (!command.ok()) {
        why = std::string(command.status().message());
      } else if (command->has_value()) {
        advanced_ms_ += (*command)->advance_ms;
        machine_->AdvanceTo(NowMsLocked());
        if ((*command)->action) why = machine_->Apply(*(*command)->action);
      }
      if (!why.empty()) {
        std::fprintf(stderr, "gpuop fake NVML: %s line %d ignored: %s\n", control_->path().c_str(),
                     number, why.c_str());
      }
    }
  }
  machine_->AdvanceTo(NowMsLocked());
}

nvmlReturn_t Driver::WaitEvent(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeout_ms) {
  std::unique_lock lock(mu_);
  if (machine_ == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (machine_->events().Find(set) == nullptr || data == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const uint64_t generation = generation_;
  const auto deadline = SteadyClock::now() + std::chrono::milliseconds(timeout_ms);
  nvmlReturn_t result = NVML_ERROR_TIMEOUT;
  ++waiters_;
  while (true) {
    if (machine_ == nullptr || generation_ != generation) {
      result = NVML_ERROR_UNINITIALIZED;
      break;
    }
    const uint64_t version = machine_->events().version();
    SyncLocked();
    if (machine_->events().version() != version && waiters_ > 1) cv_.notify_all();
    nvmlEventSet_st* live = machine_->events().Find(set);
    if (live == nullptr) {
      result = NVML_ERROR_INVALID_ARGUMENT;
      break;
    }
    if (EventHub::Pop(*live, data)) {
      result = NVML_SUCCESS;
      break;
    }
    const auto now = SteadyClock::now();
    if (now >= deadline) break;
    auto wake = deadline;
    if (control_) wake = std::min(wake, now + kControlPoll);
    if (const std::optional<int64_t> due = machine_->NextDueMs(); due && time_scale_ > 0) {
      const double real_ms = static_cast<double>(*due - NowMsLocked()) / time_scale_;
      const auto until_due =
          std::chrono::microseconds(static_cast<int64_t>(std::clamp(real_ms, 0.0, 1e9) * 1000) + 1);
      wake = std::min(wake, now + until_due);
    }
    cv_.wait_until(lock, wake);
  }
  --waiters_;
  return result;
}

}  // namespace gpuop::fakenvml
