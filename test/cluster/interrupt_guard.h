#ifndef GPUOP_TEST_CLUSTER_INTERRUPT_GUARD_H_
#define GPUOP_TEST_CLUSTER_INTERRUPT_GUARD_H_

#include <sys/types.h>

namespace gpuop::test {

// Stops tracked child processes when the test process is interrupted.
//
// A test run that is interrupted (Ctrl-C, SIGTERM from a CI runner, SIGHUP) must not leave a
// control plane behind. The handlers installed here send SIGTERM to every tracked process group
// in descending `rank` (the reverse of start order), wait a few seconds for each, SIGKILL what is
// left, and then let the signal take its default action. For a process that dies without running
// handlers (SIGKILL, a crash), children are still killed by the kernel through PR_SET_PDEATHSIG
// (see common::SpawnOptions::kill_with_parent).
//
// The registry is process-wide because signal handlers can reach nothing else; it is fixed-size
// and lock-free so the handler only uses async-signal-safe operations.
class InterruptGuard {
 public:
  // Installs the handlers for SIGINT, SIGTERM and SIGHUP. Idempotent.
  static void Install();
  // Tracks a child that leads its own process group. Returns false when the registry is full.
  static bool Track(pid_t pid, int rank);
  static void Untrack(pid_t pid);
};

}  // namespace gpuop::test

#endif  // GPUOP_TEST_CLUSTER_INTERRUPT_GUARD_H_
