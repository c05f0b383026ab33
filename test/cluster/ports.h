#ifndef GPUOP_TEST_CLUSTER_PORTS_H_
#define GPUOP_TEST_CLUSTER_PORTS_H_

#include <vector>

#include "absl/status/statusor.h"

namespace gpuop::test {

// Returns `count` distinct TCP ports on 127.0.0.1 that were free a moment ago. All are held open
// together while choosing, so the same port is never returned twice; another process may still
// take one before the caller binds it, which callers detect and retry.
[[nodiscard]] absl::StatusOr<std::vector<int>> PickFreeLoopbackPorts(int count);

}  // namespace gpuop::test

#endif  // GPUOP_TEST_CLUSTER_PORTS_H_
