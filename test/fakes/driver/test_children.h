#ifndef GPUOP_TEST_FAKES_DRIVER_TEST_CHILDREN_H_
#define GPUOP_TEST_FAKES_DRIVER_TEST_CHILDREN_H_

// For the driver's tests: child processes that hold something (a device node, a mapping) the
// way a GPU client would, until killed.

#include <vector>

#include <sys/types.h>
#include <unistd.h>

namespace gpuop::fakedriver {

// Forks a child that runs `body`, tells the parent through a pipe whether it returned true, and
// then waits to be killed. Returns the child's pid once it holds what `body` took (0 when it
// failed); every child forked is appended to `children` for the test to kill.
template <typename Fn>
pid_t ForkHolder(Fn body, std::vector<pid_t>& children) {
  int ready[2];
  if (pipe(ready) != 0) return 0;
  const pid_t pid = fork();
  if (pid == 0) {
    close(ready[0]);
    const char ok = body() ? 'y' : 'n';
    if (write(ready[1], &ok, 1) != 1) _exit(1);
    while (true) pause();
  }
  close(ready[1]);
  char answer = 'n';
  const bool held = read(ready[0], &answer, 1) == 1 && answer == 'y';
  close(ready[0]);
  if (pid > 0) children.push_back(pid);
  return held ? pid : 0;
}

}  // namespace gpuop::fakedriver

#endif  // GPUOP_TEST_FAKES_DRIVER_TEST_CHILDREN_H_
