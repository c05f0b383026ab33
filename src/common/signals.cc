#include "common/signals.h"

#include <pthread.h>
#include <signal.h>

namespace gpuop::common {
namespace {

sigset_t TerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

void BlockTerminationSignals() {
  const sigset_t set = TerminationSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

bool TerminationSignalPending(absl::Duration timeout) {
  const sigset_t set = TerminationSignals();
  const timespec wait = absl::ToTimespec(timeout);
  return sigtimedwait(&set, nullptr, &wait) > 0;
}

int WaitForTerminationSignal() {
  const sigset_t set = TerminationSignals();
  int sig = 0;
  while (sigwait(&set, &sig) != 0) {
  }
  return sig;
}

}  // namespace gpuop::common
