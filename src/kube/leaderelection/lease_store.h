#ifndef GPUOP_KUBE_LEADERELECTION_LEASE_STORE_H_
#define GPUOP_KUBE_LEADERELECTION_LEASE_STORE_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kube/client/client.h"
#include "kube/types/lease.h"

namespace gpuop::kube {

// Reads and writes the one coordination.k8s.io/v1 Lease a LeaderElector competes for. The
// elector owns the election logic; a store only moves records, so a test can wrap it to inject
// faults (a partition: every call fails with Unavailable) or replace it with FakeLeaseStore.
//
// Implementations are thread-safe.
class LeaseStore {
 public:
  virtual ~LeaseStore() = default;

  // The Lease ns/name as the server has it now; NotFound when there is none.
  [[nodiscard]] virtual absl::StatusOr<Lease> Get(absl::string_view ns, absl::string_view name) = 0;

  // Creates `lease` (named by its metadata); AlreadyExists when another writer created it first.
  [[nodiscard]] virtual absl::StatusOr<Lease> Create(const Lease& lease) = 0;

  // Replaces the Lease named by `lease.metadata`, whose resource_version is a precondition:
  // Aborted when the Lease changed since that version was read.
  [[nodiscard]] virtual absl::StatusOr<Lease> Update(const Lease& lease) = 0;
};

// A LeaseStore on the API server.
//
// Thread-safe. `client` must outlive the store.
class ClientLeaseStore final : public LeaseStore {
 public:
  explicit ClientLeaseStore(Client& client) : client_(client) {}

  absl::StatusOr<Lease> Get(absl::string_view ns, absl::string_view name) override;
  absl::StatusOr<Lease> Create(const Lease& lease) override;
  absl::StatusOr<Lease> Update(const Lease& lease) override;

 private:
  Client& client_;
};

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_LEADERELECTION_LEASE_STORE_H_
