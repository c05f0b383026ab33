#include "test/cluster/interrupt_guard.h"

#include <array>
#include <atomic>
#include <csignal>
#include <ctime>

#include <sys/wait.h>
#include <unistd.h>

namespace gpuop::test {
namespace {

struct Slot {
  std::atomic<pid_t> pid{0};
  std::atomic<int> rank{0};
};

constexpr int kSlots = 128;
std::array<Slot, kSlots> slots;
std::atomic<bool> installed{false};

void SleepMillis(long ms) {
  timespec ts{.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
  nanosleep(&ts, nullptr);
}

// Waits up to `ms` for `pid` to exit; true when it did.
bool WaitExit(pid_t pid, long ms) {
  for (long waited = 0; waited <= ms; waited += 20) {
    int status;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) return true;
    SleepMillis(20);
  }
  return false;
}

void StopAll(int sig) {
  int saved_errno = errno;
  // Highest rank first: the reverse of start order.
  for (int rank = 100; rank >= 0; --rank) {
    for (auto& slot : slots) {
      const pid_t pid = slot.pid.load();
      if (pid <= 0 || slot.rank.load() != rank) continue;
      kill(-pid, SIGTERM);
      if (!WaitExit(pid, 5000)) {
        kill(-pid, SIGKILL);
        WaitExit(pid, 2000);
      }
      kill(-pid, SIGKILL);  // Anything left in the group.
      slot.pid.store(0);
    }
  }
  errno = saved_errno;
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

void InterruptGuard::Install() {
  if (installed.exchange(true)) return;
  struct sigaction action {};
  action.sa_handler = &StopAll;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&action.sa_mask, sig);
  action.sa_flags = SA_RESETHAND;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &action, nullptr);
}

bool InterruptGuard::Track(pid_t pid, int rank) {
  for (auto& slot : slots) {
    pid_t expected = 0;
    // Reserve the slot (-1 is skipped by the handler), then publish rank before pid.
    if (slot.pid.compare_exchange_strong(expected, -1)) {
      slot.rank.store(rank);
      slot.pid.store(pid);
      return true;
    }
  }
  return false;
}

void InterruptGuard::Untrack(pid_t pid) {
  for (auto& slot : slots) {
    pid_t expected = pid;
    if (slot.pid.compare_exchange_strong(expected, 0)) return;
  }
}

}  // namespace gpuop::test
