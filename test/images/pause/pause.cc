// The pod sandbox program of the image localhost/pause:3.10, which the node tests pin as
// containerd's sandbox image (no registry is reachable there, so no upstream pause image).
//
// It is PID 1 of every pod sandbox: it holds the pod's namespaces open, reaps the children that
// are reparented to it (with a shared PID namespace every orphan of the pod lands here), and
// exits 0 on SIGINT or SIGTERM, which is how the runtime stops a sandbox. Built -static so the
// image is this one file.
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

constexpr char kVersion[] = "gpuop-pause 3.10";

void Stop(int /*signal*/) { _exit(0); }

void Reap(int /*signal*/) {
  const int saved_errno = errno;
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
  errno = saved_errno;
}

bool Handle(int signal, void (*handler)(int), int flags) {
  struct sigaction action {};
  action.sa_handler = handler;
  action.sa_flags = flags;
  sigemptyset(&action.sa_mask);
  if (sigaction(signal, &action, nullptr) != 0) {
    std::fprintf(stderr, "pause: sigaction(%s): %s\n", strsignal(signal), std::strerror(errno));
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {
    if (std::strcmp(argv[1], "-v") == 0 || std::strcmp(argv[1], "--version") == 0) {
      std::printf("%s\n", kVersion);
      return 0;
    }
    std::fprintf(stderr, "usage: %s [-v]\n", argv[0]);
    return 2;
  }
  if (getpid() != 1) std::fprintf(stderr, "pause: warning: not running as PID 1\n");
  if (!Handle(SIGINT, Stop, 0) || !Handle(SIGTERM, Stop, 0) ||
      !Handle(SIGCHLD, Reap, SA_NOCLDSTOP | SA_RESTART)) {
    return 1;
  }
  for (;;) pause();
}
