#ifndef GPUOP_AGENT_CDI_HOOK_CONFINED_EXEC_H_
#define GPUOP_AGENT_CDI_HOOK_CONFINED_EXEC_H_

#include <functional>
#include <string>
#include <vector>

#include "agent/cdi/hook/status.h"

namespace gpuop::agent::cdi::hook {

// Runs a program of the container's image (its ldconfig) on the container's root file system,
// confined so that an untrusted binary gains nothing from running in the hook's context (root,
// every capability, the host's mount tree still visible before pivot_root):
//   - a private mount namespace in which `root` becomes "/" (pivot_root, the old root detached;
//     chroot when pivot_root is refused, as on an initramfs root);
//   - every capability dropped (bounding, ambient, effective, permitted, inheritable) and
//     no_new_privs set, so it cannot mount, chroot its way out or gain privileges by exec;
//   - an environment of PATH only, stdin from /dev/null, stdout to the hook's stderr, no other
//     descriptors;
//   - killed after `timeout_seconds`.
// `argv[0]` is the program's path inside the root. Returns its exit code (128 + signal when
// killed by one), or an error when it could not be started (the error says which step failed).
StatusOr<int> RunConfined(const std::string& root, const std::vector<std::string>& argv,
                          int timeout_seconds);

// RunConfined as a replaceable function, for tests.
using ConfinedRunner =
    std::function<StatusOr<int>(const std::string& root, const std::vector<std::string>& argv)>;

}  // namespace gpuop::agent::cdi::hook

#endif  // GPUOP_AGENT_CDI_HOOK_CONFINED_EXEC_H_
