#ifndef GPUOP_KUBE_LEADERELECTION_FAKE_LEASE_STORE_H_
#define GPUOP_KUBE_LEADERELECTION_FAKE_LEASE_STORE_H_

#include <map>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "kube/leaderelection/lease_store.h"

namespace gpuop::kube {

// An in-memory LeaseStore with the API server's semantics (resourceVersion increments on every
// write; stale writes are Aborted; Create of an existing Lease is AlreadyExists) and faults to
// inject: every call failing, calls blocking until released, a competing write that lands just
// before the next Update.
//
// Thread-safe.
class FakeLeaseStore final : public LeaseStore {
 public:
  absl::StatusOr<Lease> Get(absl::string_view ns, absl::string_view name) override;
  absl::StatusOr<Lease> Create(const Lease& lease) override;
  absl::StatusOr<Lease> Update(const Lease& lease) override;

  // Writes `lease` as another client would, ignoring its resource_version; returns the stored
  // record.
  Lease Put(Lease lease);
  // The stored Lease, if any.
  std::optional<Lease> Peek(absl::string_view ns, absl::string_view name) const;

  // Every call fails with `status` until it is set back to OK.
  void SetFailure(absl::Status status);
  // While blocked, calls wait (in real time) until Unblock().
  void Block();
  void Unblock();
  // The next Update() first lets `competitor` be written (as by Put), then proceeds; so it fails
  // with Aborted, as when another candidate wins a race.
  void RaceNextUpdate(Lease competitor);

  // Calls to Get() so far, failed ones included. Tests wait on it to know an elector has made
  // an attempt before they move a fake clock.
  int gets() const;
  // Blocks (in real time) until gets() >= `count` or `timeout` passes; returns whether it got
  // there. The timeout only keeps a broken test from hanging.
  [[nodiscard]] bool AwaitGets(int count, absl::Duration timeout = absl::Seconds(30)) const;
  // Successful Create() and Update() calls.
  int writes() const;

 private:
  // Counts the call and waits while blocked; the failure to return, if any.
  absl::Status Enter(bool is_get);
  Lease Store(Lease lease) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::map<std::string, Lease> leases_ ABSL_GUARDED_BY(mu_);  // by "namespace/name"
  int64_t version_ ABSL_GUARDED_BY(mu_) = 100;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  bool blocked_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<Lease> race_ ABSL_GUARDED_BY(mu_);
  int gets_ ABSL_GUARDED_BY(mu_) = 0;
  int writes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_LEADERELECTION_FAKE_LEASE_STORE_H_
