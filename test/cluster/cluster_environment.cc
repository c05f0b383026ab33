#include "test/cluster/cluster_environment.h"

#include <atomic>
#include <cstdio>
#include <random>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace gpuop::test {
namespace {

ControlPlane* current = nullptr;

}  // namespace

void ClusterEnvironment::SetUp() {
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<ControlPlane>> cp = ControlPlane::Start({.profile = profile_});
  if (!cp.ok()) GTEST_FAIL() << "start test control plane: " << cp.status();
  control_plane_ = *std::move(cp);
  current = control_plane_.get();
  std::fprintf(stderr, "[cluster] %s control plane at %s ready in %s (work dir %s)\n",
               std::string(ProfileName(profile_)).c_str(), current->server().c_str(),
               absl::FormatDuration(absl::Now() - start).c_str(), current->work_dir().c_str());
}

void ClusterEnvironment::TearDown() {
  if (!control_plane_) return;
  if (::testing::UnitTest::GetInstance()->Failed()) {
    control_plane_->KeepWorkDir();
    std::fprintf(stderr, "[cluster] tests failed; logs kept in %s\n",
                 control_plane_->work_dir().c_str());
  }
  const absl::Status stopped = control_plane_->Stop();
  current = nullptr;
  control_plane_.reset();
  if (!stopped.ok()) GTEST_FAIL() << "stop test control plane: " << stopped;
}

ControlPlane& ClusterEnvironment::Get() {
  if (current == nullptr) {
    std::fprintf(stderr, "ClusterEnvironment::Get() called outside a running environment\n");
    std::abort();
  }
  return *current;
}

std::string UniqueName(absl::string_view prefix) {
  static std::atomic<int> counter{0};
  static const uint32_t salt = std::random_device{}() % 46656;  // three base-36 digits
  std::string suffix;
  for (uint32_t v = salt, i = 0; i < 3; ++i, v /= 36) {
    suffix.push_back("0123456789abcdefghijklmnopqrstuvwxyz"[v % 36]);
  }
  return absl::StrCat(prefix, "-", getpid(), "-", ++counter, "-", suffix);
}

int RunTestsWithCluster(int argc, char** argv, Profile profile) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new ClusterEnvironment(profile));
  return RUN_ALL_TESTS();
}

}  // namespace gpuop::test
