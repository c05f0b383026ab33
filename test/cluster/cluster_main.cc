// main() for test binaries that need a control plane; GPUOP_TEST_PROFILE names the profile.
#include "test/cluster/cluster_environment.h"

int main(int argc, char** argv) {
  return gpuop::test::RunTestsWithCluster(argc, argv, gpuop::test::Profile::GPUOP_TEST_PROFILE);
}
