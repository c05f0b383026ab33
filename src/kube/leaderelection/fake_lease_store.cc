#include "kube/leaderelection/fake_lease_store.h"

#include "absl/strings/str_cat.h"

namespace gpuop::kube {

absl::Status FakeLeaseStore::Enter(bool is_get) {
  absl::MutexLock lock(&mu_);
  if (is_get) ++gets_;
  auto unblocked = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !blocked_; };
  mu_.Await(absl::Condition(&unblocked));
  return failure_;
}

Lease FakeLeaseStore::Store(Lease lease) {
  lease.metadata.resource_version = absl::StrCat(++version_);
  leases_[lease.metadata.Key()] = lease;
  return lease;
}

absl::StatusOr<Lease> FakeLeaseStore::Get(absl::string_view ns, absl::string_view name) {
  if (absl::Status failure = Enter(/*is_get=*/true); !failure.ok()) return failure;
  absl::MutexLock lock(&mu_);
  auto it = leases_.find(absl::StrCat(ns, "/", name));
  if (it == leases_.end()) {
    return absl::NotFoundError(absl::StrCat("get lease ", ns, "/", name, ": not found"));
  }
  return it->second;
}

absl::StatusOr<Lease> FakeLeaseStore::Create(const Lease& lease) {
  if (absl::Status failure = Enter(/*is_get=*/false); !failure.ok()) return failure;
  absl::MutexLock lock(&mu_);
  if (leases_.contains(lease.metadata.Key())) {
    return absl::AlreadyExistsError(
        absl::StrCat("create lease ", lease.metadata.Key(), ": already exists"));
  }
  ++writes_;
  return Store(lease);
}

absl::StatusOr<Lease> FakeLeaseStore::Update(const Lease& lease) {
  if (absl::Status failure = Enter(/*is_get=*/false); !failure.ok()) return failure;
  absl::MutexLock lock(&mu_);
  if (race_) {
    Store(*std::move(race_));
    race_.reset();
  }
  auto it = leases_.find(lease.metadata.Key());
  if (it == leases_.end()) {
    return absl::NotFoundError(absl::StrCat("update lease ", lease.metadata.Key(), ": not found"));
  }
  if (it->second.metadata.resource_version != lease.metadata.resource_version) {
    return absl::AbortedError(absl::StrCat("update lease ", lease.metadata.Key(),
                                           ": 409 Conflict: the object has been modified"));
  }
  ++writes_;
  return Store(lease);
}

Lease FakeLeaseStore::Put(Lease lease) {
  absl::MutexLock lock(&mu_);
  return Store(std::move(lease));
}

std::optional<Lease> FakeLeaseStore::Peek(absl::string_view ns, absl::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = leases_.find(absl::StrCat(ns, "/", name));
  if (it == leases_.end()) return std::nullopt;
  return it->second;
}

void FakeLeaseStore::SetFailure(absl::Status status) {
  absl::MutexLock lock(&mu_);
  failure_ = std::move(status);
}

void FakeLeaseStore::Block() {
  absl::MutexLock lock(&mu_);
  blocked_ = true;
}

void FakeLeaseStore::Unblock() {
  absl::MutexLock lock(&mu_);
  blocked_ = false;
}

void FakeLeaseStore::RaceNextUpdate(Lease competitor) {
  absl::MutexLock lock(&mu_);
  race_ = std::move(competitor);
}

int FakeLeaseStore::gets() const {
  absl::MutexLock lock(&mu_);
  return gets_;
}

bool FakeLeaseStore::AwaitGets(int count, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto enough = [this, count]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return gets_ >= count; };
  return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
}

int FakeLeaseStore::writes() const {
  absl::MutexLock lock(&mu_);
  return writes_;
}

}  // namespace gpuop::kube
