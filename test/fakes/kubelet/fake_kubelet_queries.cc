// The fake kubelet's queries and blocking waits.

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "test/fakes/kubelet/fake_kubelet.h"
#include "test/fakes/kubelet/fake_kubelet_internal.h"

namespace gpuop::fakes {
namespace {

std::string Describe(const KubeletResource& info) {
  return absl::StrCat(info.connected ? "connected" : "not connected", ", ", info.allocatable,
                      " healthy of ", info.capacity, " devices, ", info.registrations,
                      " registrations, ", info.list_and_watch_messages, " ListAndWatch messages, ",
                      info.stream_ends, " stream ends");
}

}  // namespace

std::vector<std::string> FakeKubelet::Resources() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> names;
  for (const auto& [name, state] : resources_) names.push_back(name);
  return names;
}

absl::StatusOr<KubeletResource> FakeKubelet::Resource(absl::string_view resource) const {
  absl::MutexLock lock(&mu_);
  auto it = resources_.find(resource);
  if (it == resources_.end()) {
    return absl::NotFoundError(
        absl::StrCat("resource ", resource, " never registered with the kubelet"));
  }
  return it->second.info;
}

int64_t FakeKubelet::Capacity(absl::string_view resource) const {
  absl::MutexLock lock(&mu_);
  auto it = resources_.find(resource);
  return it == resources_.end() ? 0 : it->second.info.capacity;
}

int64_t FakeKubelet::Allocatable(absl::string_view resource) const {
  absl::MutexLock lock(&mu_);
  auto it = resources_.find(resource);
  return it == resources_.end() ? 0 : it->second.info.allocatable;
}

int64_t FakeKubelet::plugin_calls_in_flight() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(calls_.size());
}

int64_t FakeKubelet::node_patches() const {
  absl::MutexLock lock(&mu_);
  return node_patches_;
}

absl::Status FakeKubelet::last_node_patch_status() const {
  absl::MutexLock lock(&mu_);
  return last_node_patch_;
}

std::vector<std::string> FakeKubelet::AllocatedDevices(absl::string_view resource) const {
  absl::MutexLock lock(&mu_);
  auto it = allocated_.find(resource);
  if (it == allocated_.end()) return {};
  std::vector<std::string> ids(it->second.begin(), it->second.end());
  std::sort(ids.begin(), ids.end());
  return ids;
}

absl::Status FakeKubelet::WaitUntil(absl::string_view resource, absl::string_view what,
                                    std::function<bool(const KubeletResource&)> condition,
                                    absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  const auto holds = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    auto it = resources_.find(resource);
    return it != resources_.end() && condition(it->second.info);
  };
  const common::Clock& clock = *options_.clock;
  if (clock.AwaitWithDeadline(mu_, absl::Condition(&holds), clock.Now() + timeout)) {
    return absl::OkStatus();
  }
  auto it = resources_.find(resource);
  return absl::DeadlineExceededError(
      absl::StrCat("waited ", absl::FormatDuration(timeout), " for ", resource, " to ", what,
                   "; it is ", it == resources_.end() ? "unknown" : Describe(it->second.info)));
}

absl::Status FakeKubelet::WaitForHealthyDevices(absl::string_view resource, int64_t count,
                                                absl::Duration timeout) const {
  return WaitUntil(
      resource, absl::StrCat("have ", count, " healthy devices"),
      [count](const KubeletResource& r) { return r.connected && r.allocatable == count; }, timeout);
}

absl::Status FakeKubelet::WaitForConnected(absl::string_view resource,
                                           absl::Duration timeout) const {
  return WaitUntil(
      resource, "be connected", [](const KubeletResource& r) { return r.connected; }, timeout);
}

absl::Status FakeKubelet::WaitForDisconnected(absl::string_view resource,
                                              absl::Duration timeout) const {
  return WaitUntil(
      resource, "be disconnected", [](const KubeletResource& r) { return !r.connected; }, timeout);
}

absl::Status FakeKubelet::WaitForRegistrations(absl::string_view resource, int64_t count,
                                               absl::Duration timeout) const {
  return WaitUntil(
      resource, absl::StrCat("have registered ", count, " times"),
      [count](const KubeletResource& r) { return r.registrations >= count; }, timeout);
}

absl::Status FakeKubelet::WaitForListAndWatchMessages(absl::string_view resource, int64_t count,
                                                      absl::Duration timeout) const {
  return WaitUntil(
      resource, absl::StrCat("have sent ", count, " ListAndWatch messages"),
      [count](const KubeletResource& r) { return r.list_and_watch_messages >= count; }, timeout);
}

absl::Status FakeKubelet::WaitForPluginCallsInFlight(int64_t count, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  const auto reached = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return static_cast<int64_t>(calls_.size()) >= count;
  };
  const common::Clock& clock = *options_.clock;
  if (clock.AwaitWithDeadline(mu_, absl::Condition(&reached), clock.Now() + timeout)) {
    return absl::OkStatus();
  }
  return absl::DeadlineExceededError(absl::StrCat("waited ", absl::FormatDuration(timeout), " for ",
                                                  count, " plugin calls in flight; ", calls_.size(),
                                                  " are"));
}

}  // namespace gpuop::fakes
