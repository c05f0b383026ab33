#include "kube/events/fake_event_sink.h"

#include "absl/strings/str_cat.h"
#include "kube/types/json_fields.h"

namespace gpuop::kube {

absl::Status FakeEventSink::Enter() {
  ++blocked_calls_;
  auto unblocked = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !blocked_; };
  mu_.Await(absl::Condition(&unblocked));
  --blocked_calls_;
  if (failures_left_ == 0) return absl::OkStatus();
  if (failures_left_ > 0) --failures_left_;
  return failure_;
}

absl::Status FakeEventSink::Create(absl::string_view ns, const Json& event) {
  const std::string key = absl::StrCat(ns, "/", StringField(Field(event, "metadata"), "name"));
  absl::MutexLock lock(&mu_);
  absl::Status failure = Enter();
  ++creates_;
  if (!failure.ok()) return failure;
  if (events_.contains(key)) {
    return absl::AlreadyExistsError(absl::StrCat("create events ", key, ": already exists"));
  }
  events_[key] = event;
  return absl::OkStatus();
}

absl::Status FakeEventSink::Patch(absl::string_view ns, absl::string_view name, const Json& patch) {
  const std::string key = absl::StrCat(ns, "/", name);
  absl::MutexLock lock(&mu_);
  absl::Status failure = Enter();
  ++patches_;
  if (!failure.ok()) return failure;
  auto it = events_.find(key);
  if (it == events_.end()) {
    return absl::NotFoundError(absl::StrCat("patch events ", key, ": not found"));
  }
  it->second.merge_patch(patch);
  return absl::OkStatus();
}

std::vector<Json> FakeEventSink::Events() const {
  absl::MutexLock lock(&mu_);
  std::vector<Json> events;
  for (const auto& [key, event] : events_) events.push_back(event);
  return events;
}

std::optional<Json> FakeEventSink::Get(absl::string_view ns, absl::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = events_.find(absl::StrCat(ns, "/", name));
  if (it == events_.end()) return std::nullopt;
  return it->second;
}

void FakeEventSink::Expire(absl::string_view ns, absl::string_view name) {
  absl::MutexLock lock(&mu_);
  events_.erase(absl::StrCat(ns, "/", name));
}

void FakeEventSink::Fail(absl::Status status, int count) {
  absl::MutexLock lock(&mu_);
  failure_ = std::move(status);
  failures_left_ = failure_.ok() ? 0 : count;
}

void FakeEventSink::Block() {
  absl::MutexLock lock(&mu_);
  blocked_ = true;
}

void FakeEventSink::Unblock() {
  absl::MutexLock lock(&mu_);
  blocked_ = false;
}

int FakeEventSink::creates() const {
  absl::MutexLock lock(&mu_);
  return creates_;
}

int FakeEventSink::patches() const {
  absl::MutexLock lock(&mu_);
  return patches_;
}

bool FakeEventSink::AwaitCalls(int count, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto enough = [this, count]()
                    ABSL_SHARED_LOCKS_REQUIRED(mu_) { return creates_ + patches_ >= count; };
  return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
}

bool FakeEventSink::AwaitBlocked(int count, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto enough = [this, count]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return blocked_calls_ >= count; };
  return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
}

}  // namespace gpuop::kube
