#include "kube/leaderelection/fake_lease_store.h"

#include <gtest/gtest.h>

namespace gpuop::kube {
namespace {

Lease MakeLease(const std::string& holder) {
  Lease lease;
  lease.metadata.namespace_ = "ns";
  lease.metadata.name = "lock";
  lease.holder_identity = holder;
  lease.lease_duration_seconds = 15;
  return lease;
}

TEST(FakeLeaseStoreTest, CreateGetUpdateWithResourceVersions) {
  FakeLeaseStore store;
  EXPECT_EQ(store.Get("ns", "lock").status().code(), absl::StatusCode::kNotFound);
  absl::StatusOr<Lease> created = store.Create(MakeLease("a"));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_FALSE(created->metadata.resource_version.empty());
  EXPECT_EQ(store.Create(MakeLease("b")).status().code(), absl::StatusCode::kAlreadyExists);

  absl::StatusOr<Lease> read = store.Get("ns", "lock");
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->holder_identity, "a");
  Lease next = MakeLease("b");
  next.metadata = read->metadata;
  absl::StatusOr<Lease> updated = store.Update(next);
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_NE(updated->metadata.resource_version, read->metadata.resource_version);
  // A write from the stale version conflicts.
  EXPECT_EQ(store.Update(next).status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(store.gets(), 2);
  EXPECT_EQ(store.writes(), 2);
}

TEST(FakeLeaseStoreTest, FailuresAndRaces) {
  FakeLeaseStore store;
  const Lease stored = store.Put(MakeLease("a"));
  store.SetFailure(absl::UnavailableError("partitioned"));
  EXPECT_EQ(store.Get("ns", "lock").status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(store.Update(stored).status().code(), absl::StatusCode::kUnavailable);
  store.SetFailure(absl::OkStatus());

  store.RaceNextUpdate(MakeLease("b"));
  EXPECT_EQ(store.Update(stored).status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(store.Peek("ns", "lock")->holder_identity, "b");
  EXPECT_TRUE(store.AwaitGets(1));
  EXPECT_FALSE(store.AwaitGets(2, absl::ZeroDuration()));
}

}  // namespace
}  // namespace gpuop::kube
