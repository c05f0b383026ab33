#include "agent/mps/manager.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "agent/deviceplugin/resources.h"
#include "common/files.h"
#include "common/status_macros.h"

namespace gpuop::agent::mps {

Manager::Manager(hw::Accelerator& gpus, ControlProgram& control, ConfigSource& config,
                 ManagerOptions options)
    : gpus_(gpus),
      control_(control),
      source_(config),
      options_(std::move(options)),
      root_(options_.root) {}

Manager::~Manager() { Stop(); }

void Manager::Log(const std::string& line) const {
  if (options_.log) {
    options_.log(line);
  } else {
    std::fprintf(stderr, "mps-daemon: %s\n", line.c_str());
  }
}

absl::Status Manager::last_error() const {
  absl::MutexLock lock(&mu_);
  return last_error_;
}

ReadyResources Manager::running() const {
  absl::MutexLock lock(&mu_);
  return running_;
}

absl::StatusOr<ReadyResources> Manager::Wanted(std::vector<std::unique_ptr<Daemon>>& daemons) {
  GPUOP_ASSIGN_OR_RETURN(DevicePluginConfig config, source_.Load());
  if (config.sharing_strategy != SharingStrategy::kMps) return ReadyResources{};
  if (config.mps_root != options_.host_root) {
    return absl::FailedPreconditionError(
        absl::StrCat("flags.mpsRoot: \"", config.mps_root, "\": the MPS daemons run with ",
                     options_.host_root, " (the directory the operator mounts for them)"));
  }
  GPUOP_ASSIGN_OR_RETURN(hw::Inventory inventory, gpus_.Discover());
  GPUOP_ASSIGN_OR_RETURN(ResourcePlan plan, PlanResources(inventory.gpus, config));
  ReadyResources shares = MpsShares(plan);
  for (const auto& [resource, by_uuid] : shares) {
    std::vector<SharedGpu> shared;
    for (const auto& [uuid, replicas] : by_uuid) {
      for (const hw::Gpu& gpu : inventory.gpus) {
        if (gpu.uuid != uuid) continue;
        shared.push_back({.index = gpu.index,
                          .uuid = gpu.uuid,
                          .memory_bytes = gpu.memory_bytes,
                          .replicas = replicas});
      }
    }
    daemons.push_back(
        std::make_unique<Daemon>(resource, std::move(shared), root_, gpus_, control_));
  }
  return shares;
}

absl::Status Manager::StopDaemons() {
  absl::Status first;
  std::error_code ec;
  // The device plugin stops serving before the daemons go.
  std::filesystem::remove(root_.ReadyFile(), ec);
  if (ec)
    first = absl::UnavailableError(
        absl::StrCat("remove ", root_.ReadyFile().string(), ": ", ec.message()));
  for (auto& daemon : daemons_) first.Update(daemon->Stop());
  daemons_.clear();
  running_.clear();
  return first;
}

absl::Status Manager::Apply() {
  std::vector<std::unique_ptr<Daemon>> next;
  absl::StatusOr<ReadyResources> wanted = Wanted(next);
  absl::MutexLock lock(&mu_);
  if (!wanted.ok()) {
    // The daemons of the last good configuration keep running, as the device plugin keeps it.
    last_error_ = wanted.status();
    return last_error_;
  }
  if (*wanted == running_ && daemons_.size() == wanted->size()) {
    last_error_ = absl::OkStatus();
    return last_error_;
  }
  absl::Status stopped = StopDaemons();
  if (!stopped.ok()) Log(stopped.ToString());
  for (auto& daemon : next) {
    Log(absl::StrCat("starting the MPS control daemon of ", daemon->resource()));
    absl::Status started = daemon->Start();
    daemons_.push_back(std::move(daemon));  // a half-started one is stopped too
    if (!started.ok()) {
      if (absl::Status undone = StopDaemons(); !undone.ok()) Log(undone.ToString());
      last_error_ = started;
      return started;
    }
  }
  if (!daemons_.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(root_.ShmDir(), ec);
    absl::Status ready = common::WriteFileAtomically(root_.ReadyFile(), FormatReady(*wanted));
    if (!ready.ok()) {
      (void)StopDaemons();
      last_error_ = ready;
      return ready;
    }
  }
  running_ = *std::move(wanted);
  last_error_ = absl::OkStatus();
  return last_error_;
}

absl::Status Manager::CheckHealth() {
  absl::MutexLock lock(&mu_);
  for (auto& daemon : daemons_) {
    absl::Status healthy = daemon->CheckHealthy();
    if (healthy.ok()) continue;
    Log(absl::StrCat(healthy.ToString(), "; stopping every daemon to start them again"));
    if (absl::Status stopped = StopDaemons(); !stopped.ok()) Log(stopped.ToString());
    last_error_ = healthy;
    return healthy;
  }
  return absl::OkStatus();
}

absl::Status Manager::Start() {
  if (!source_.dir().empty()) GPUOP_RETURN_IF_ERROR(watch_.Add(source_.dir()));
  if (absl::Status applied = Apply(); !applied.ok()) Log(applied.ToString());
  thread_ = std::jthread([this](std::stop_token stop) { Run(stop); });
  return absl::OkStatus();
}

void Manager::Stop() {
  thread_ = std::jthread();  // Stops and joins.
  absl::MutexLock lock(&mu_);
  if (absl::Status stopped = StopDaemons(); !stopped.ok()) Log(stopped.ToString());
}

void Manager::Run(std::stop_token stop) {
  const common::Clock& clock = *options_.clock;
  absl::Time next_health = clock.Now() + options_.health_interval;
  absl::Time next_retry = last_error().ok() ? absl::InfiniteFuture() : clock.Now() + options_.retry;
  const int wait_ms = static_cast<int>(absl::ToInt64Milliseconds(options_.poll));
  while (!stop.stop_requested()) {
    const bool changed = watch_.Wait(wait_ms);
    const absl::Time now = clock.Now();
    if (changed || now >= next_retry) {
      absl::Status applied = Apply();
      if (!applied.ok()) Log(applied.ToString());
      next_retry = applied.ok() ? absl::InfiniteFuture() : now + options_.retry;
    }
    if (now >= next_health) {
      next_health = now + options_.health_interval;
      if (!CheckHealth().ok()) next_retry = now + options_.retry;
    }
  }
}

}  // namespace gpuop::agent::mps
