#ifndef GPUOP_TEST_CLUSTER_CLUSTER_ENVIRONMENT_H_
#define GPUOP_TEST_CLUSTER_CLUSTER_ENVIRONMENT_H_

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "absl/strings/string_view.h"
#include "test/cluster/control_plane.h"

namespace gpuop::test {

// A GoogleTest global environment that starts one control plane for a whole test binary and
// stops it after the last test. When a test failed, the control plane's work directory (logs,
// data) is kept and its path printed.
//
// Tests reach it through ClusterEnvironment::Get(); they must not rely on what other tests left
// behind: use UniqueName() for namespaces and cluster-scoped objects, and clean up.
class ClusterEnvironment : public ::testing::Environment {
 public:
  explicit ClusterEnvironment(Profile profile) : profile_(profile) {}

  void SetUp() override;
  void TearDown() override;

  // The running control plane. Only valid between SetUp and TearDown (that is, inside tests).
  static ControlPlane& Get();

 private:
  Profile profile_;
  std::unique_ptr<ControlPlane> control_plane_;
};

// A DNS-1123 name, unique within this test run: "<prefix>-<pid>-<counter>-<random>".
std::string UniqueName(absl::string_view prefix);

// Runs the binary's tests inside a ClusterEnvironment of `profile`; for main().
int RunTestsWithCluster(int argc, char** argv, Profile profile);

}  // namespace gpuop::test

#endif  // GPUOP_TEST_CLUSTER_CLUSTER_ENVIRONMENT_H_
