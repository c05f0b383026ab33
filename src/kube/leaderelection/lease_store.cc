#include "kube/leaderelection/lease_store.h"

#include "absl/strings/str_cat.h"

namespace gpuop::kube {
namespace {

// Lease::ToJson() writes only what the elector owns; labels and annotations that others put on
// the Lease survive an Update (a PUT replaces the whole object).
Json LeaseObject(const Lease& lease) {
  Json object = lease.ToJson();
  if (!lease.metadata.labels.empty()) object["metadata"]["labels"] = lease.metadata.labels.ToJson();
  if (!lease.metadata.annotations.empty()) {
    object["metadata"]["annotations"] = lease.metadata.annotations.ToJson();
  }
  return object;
}

absl::StatusOr<Lease> Parse(const absl::StatusOr<Json>& object, absl::string_view what) {
  if (!object.ok()) return object.status();
  absl::StatusOr<Lease> lease = ParseLease(*object);
  if (!lease.ok()) {
    return absl::Status(lease.status().code(),
                        absl::StrCat(what, ": malformed Lease: ", lease.status().message()));
  }
  return lease;
}

}  // namespace

absl::StatusOr<Lease> ClientLeaseStore::Get(absl::string_view ns, absl::string_view name) {
  return Parse(client_.Get(resources::kLeases, ns, name),
               absl::StrCat("get lease ", ns, "/", name));
}

absl::StatusOr<Lease> ClientLeaseStore::Create(const Lease& lease) {
  return Parse(client_.Create(resources::kLeases, lease.metadata.namespace_, LeaseObject(lease)),
               absl::StrCat("create lease ", lease.metadata.Key()));
}

absl::StatusOr<Lease> ClientLeaseStore::Update(const Lease& lease) {
  return Parse(client_.Update(resources::kLeases, LeaseObject(lease)),
               absl::StrCat("update lease ", lease.metadata.Key()));
}

}  // namespace gpuop::kube
