// MigManager: the sync (what to do) and the worker (when). The change itself is in
// mig_change.cc.
#include "agent/mig/mig_manager.h"

#include <algorithm>
#include <functional>

#include "absl/strings/str_cat.h"
#include "agent/mig/internal/change.h"
#include "agent/mig/layout_file.h"
#include "agent/mig/mig_config.h"
#include "common/files.h"
#include "kube/events/event.h"
#include "kube/types/object_meta.h"

namespace gpuop::agent::mig {
namespace {

std::string LabelOf(const NodeMeta& meta, const char* key) {
  const auto it = meta.labels.find(key);
  return it == meta.labels.end() ? "" : it->second;
}

std::string Summary(const LayoutPlan& plan) {
  std::string out;
  for (const GpuPlan& p : plan.gpus) {
    absl::StrAppend(&out, out.empty() ? "" : "; ", "GPU ", p.gpu_index, ": ",
                    DescribeLayout(p.desired));
  }
  return out.empty() ? "no GPU selected" : out;
}

}  // namespace

MigManager::MigManager(hw::Accelerator& accelerator, MigNode& node, MigManagerOptions options)
    : accelerator_(accelerator),
      node_(node),
      options_(std::move(options)),
      clock_(*options_.clock) {}

MigManager::~MigManager() { Stop(); }

void MigManager::Start() {
  {
    absl::MutexLock lock(&mu_);
    if (started_ || stopping_) return;
    started_ = true;
  }
  worker_ = std::jthread([this] { Loop(); });
  node_.Watch([this] { Trigger(); });
}

void MigManager::Stop() {
  absl::MutexLock stop_lock(&stop_mu_);
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  node_.StopWatching();
  if (worker_.joinable()) worker_.join();
  for (std::jthread& thread : hardware_threads_) {
    if (thread.joinable()) thread.join();
  }
  hardware_threads_.clear();
}

void MigManager::Trigger() {
  absl::MutexLock lock(&mu_);
  triggered_ = true;
}

MigSyncResult MigManager::last_result() const {
  absl::MutexLock lock(&mu_);
  return last_result_;
}

int64_t MigManager::syncs() const {
  absl::MutexLock lock(&mu_);
  return syncs_;
}

MigSyncResult MigManager::SyncOnce() {
  MigSyncResult result = Sync();
  absl::MutexLock lock(&mu_);
  last_result_ = result;
  ++syncs_;
  return result;
}

void MigManager::Loop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      triggered_ = false;
    }
    const MigSyncResult result = SyncOnce();
    const absl::Time now = clock_.Now();
    absl::Time next = now + options_.resync_interval;
    switch (result.outcome) {
      case MigSyncResult::Outcome::kError:
        next = now + options_.retry_base;
        break;
      case MigSyncResult::Outcome::kFailed:
      case MigSyncResult::Outcome::kDeferred:
        next = std::min(next, retry_.at);
        break;
      default:
        break;
    }
    if (unfinished_) next = std::min(next, now + options_.retry_base);
    absl::MutexLock lock(&mu_);
    auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return triggered_ || stopping_; };
    clock_.AwaitWithDeadline(mu_, absl::Condition(&wake), next);
  }
}

bool MigManager::WaitUntil(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  clock_.AwaitWithDeadline(mu_, absl::Condition(&stopping_), deadline);
  return !stopping_;
}

absl::Status MigManager::Proceed(const Change& change, const std::string& step) const {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_)
      return absl::CancelledError(absl::StrCat("interrupted by agent shutdown while ", step));
  }
  if (clock_.Now() >= change.deadline) {
    return absl::DeadlineExceededError(absl::StrCat("timed out while ", step, " (change deadline ",
                                                    absl::FormatDuration(options_.change_deadline),
                                                    ")"));
  }
  return absl::OkStatus();
}

void MigManager::RecordFailure(const std::string& key, const absl::Status& status) {
  retry_.attempts = retry_.key == key ? retry_.attempts + 1 : 1;
  retry_.key = key;
  retry_.reason = std::string(status.message());
  if (status.code() == absl::StatusCode::kInvalidArgument) {
    retry_.at = absl::InfiniteFuture();  // until the label or the configuration changes
    return;
  }
  absl::Duration backoff = options_.retry_base;
  for (int i = 1; i < retry_.attempts && backoff < options_.retry_cap; ++i) backoff *= 2;
  retry_.at = clock_.Now() + std::min(backoff, options_.retry_cap);
}

MigSyncResult MigManager::Sync() {
  absl::StatusOr<NodeMeta> meta = node_.Get();
  if (!meta.ok()) return {.outcome = MigSyncResult::Outcome::kError, .status = meta.status()};
  meta_ = *std::move(meta);
  unfinished_ = false;
  const std::string layout = LabelOf(meta_, kConfigLabel);
  const std::string state = LabelOf(meta_, kStateLabel);

  if (layout.empty()) {
    // Nothing is selected; still finish what an interrupted change left behind.
    absl::Status cleaned = Restore();
    if (state == kStatePending) {
      cleaned.Update(WriteState(kStateFailed, absl::StrCat("the ", kConfigLabel,
                                                           " label was removed before the "
                                                           "change finished")));
    }
    unfinished_ = !cleaned.ok();
    return {.outcome = MigSyncResult::Outcome::kIdle, .status = cleaned};
  }

  if (state == kStateRebooting && meta_.annotations.contains(options_.reboot_annotation)) {
    // The reboot this manager asked for has not happened yet (the reboot tool removes the
    // request): the clients stay paused and nothing is touched until it has, or until the wait
    // has lasted reboot_timeout (a request without a timestamp counts from now).
    absl::StatusOr<absl::Time> asked =
        kube::ParseTimestamp(meta_.annotations.at(options_.reboot_annotation));
    if (!asked.ok() || clock_.Now() - *asked < options_.reboot_timeout) {
      return {.outcome = MigSyncResult::Outcome::kDeferred,
              .layout = layout,
              .status = absl::UnavailableError(absl::StrCat(
                  "waiting for the reboot requested through ", options_.reboot_annotation))};
    }
    NodeWrite withdraw;
    withdraw.annotations[options_.reboot_annotation] = std::nullopt;
    absl::Status written = Write(withdraw);
    written.Update(Restore());
    const std::string reason = absl::StrCat(
        "MIG layout ", layout, " failed: the reboot requested through ", options_.reboot_annotation,
        " did not happen within ", absl::FormatDuration(options_.reboot_timeout),
        " (does a reboot tool act on it?); the request is withdrawn and the GPU clients are "
        "back; the MIG mode change stays pending until the node reboots");
    written.Update(WriteState(kStateFailed, reason));
    node_.RecordEvent(kube::EventType::kWarning, "MigConfigFailed", reason);
    unfinished_ = !written.ok();
    return {.outcome = MigSyncResult::Outcome::kFailed,
            .layout = layout,
            .status = absl::DeadlineExceededError(reason)};
  }

  Change change{.layout = layout,
                .initial_state = state,
                .deadline = clock_.Now() + options_.change_deadline};
  absl::StatusOr<std::string> text = common::ReadFile(options_.config_file);
  change.key = absl::StrCat(
      layout, "\n",
      text.ok() ? std::to_string(std::hash<std::string>()(*text)) : text.status().ToString());
  if (retry_.key == change.key && clock_.Now() < retry_.at) {
    // The same layout failed and it is not time to try again: keep the node consistent.
    absl::Status cleaned = Restore();
    if (state == kStatePending) cleaned.Update(WriteState(kStateFailed, retry_.reason));
    unfinished_ = !cleaned.ok();
    return {.outcome = MigSyncResult::Outcome::kDeferred,
            .layout = layout,
            .status = absl::FailedPreconditionError(retry_.reason)};
  }

  // Read, resolve and plan.
  LayoutPlan plan;
  absl::Status status = [&]() -> absl::Status {
    change.step = "reading the MIG configuration";
    if (!text.ok()) {
      return absl::Status(text.status().code(),
                          absl::StrCat("read mig config: ", text.status().message()));
    }
    absl::StatusOr<MigConfig> config = ParseMigConfig(*text, options_.config_file.string());
    if (!config.ok()) return config.status();
    change.step = "discovering the GPUs";
    absl::StatusOr<hw::Inventory> inventory = accelerator_.Discover();
    if (!inventory.ok()) return inventory.status();
    absl::StatusOr<DesiredLayout> desired = ResolveLayout(*config, layout, inventory->gpus);
    if (!desired.ok()) return desired.status();
    change.desired = *desired;
    absl::StatusOr<LayoutPlan> planned = PlanLayout(*inventory, *desired);
    if (!planned.ok()) return planned.status();
    plan = *std::move(planned);
    return absl::OkStatus();
  }();
  change.in_place = status.ok() && plan.in_place();
  change.summary = Summary(plan);
  if (status.ok() && !change.in_place) status = RunChange(change, plan);
  if (status.ok() && change.in_place && state != kStateSuccess && !options_.layout_file.empty()) {
    // Finishing a change an earlier run left pending (or failed): the consumers of the layout
    // file may not have seen the layout yet.
    change.step = "writing the layout file";
    status = WriteLayoutFile(options_.layout_file, layout).status();
  }
  Finish(change, status);
  if (!status.ok()) {
    return {.outcome = MigSyncResult::Outcome::kFailed, .layout = layout, .status = status};
  }
  return {.outcome =
              change.in_place ? MigSyncResult::Outcome::kInPlace : MigSyncResult::Outcome::kApplied,
          .layout = layout};
}

}  // namespace gpuop::agent::mig
