#ifndef GPUOP_AGENT_CDI_INJECT_RUNC_ARGS_H_
#define GPUOP_AGENT_CDI_INJECT_RUNC_ARGS_H_

#include <string>
#include <vector>

// What gpuop-container-runtime needs to know about a runc command line: the containerd runc shim
// calls it exactly as it calls runc, e.g.
//   --root /run/containerd/runc/k8s.io --log /run/.../log.json --log-format json --systemd-cgroup
//     create --bundle /run/containerd/.../<id> --pid-file /run/.../init.pid <id>
namespace gpuop::agent::cdi::inject {

struct RuncInvocation {
  // The subcommand ("create", "run", "start", "delete", ...); empty when the command line has
  // none or when a global flag this parser does not know comes before it, in which case the
  // wrapper must pass the command through without acting on it.
  std::string subcommand;
  // For "create" and "run": the bundle directory as given (--bundle DIR, -b DIR, --bundle=DIR);
  // "." (runc's default, the current directory) when absent. Empty for other subcommands.
  std::string bundle;
  // The global --log path and --log-format ("text" or "json"); empty when not given.
  std::string log_path;
  std::string log_format;

  bool operator==(const RuncInvocation&) const = default;
};

// Parses runc's argument list (`args` excludes argv[0]). Flags are accepted the way runc's flag
// parser accepts them: "--flag value", "--flag=value", and with a single leading dash. Known
// global flags: --debug and --systemd-cgroup (booleans, "=true"/"=false" allowed); --log,
// --log-format, --root, --criu and --rootless (take a value). Never fails: anything it cannot
// make sense of leaves `subcommand` empty.
RuncInvocation ParseRuncArgs(const std::vector<std::string>& args);

}  // namespace gpuop::agent::cdi::inject

#endif  // GPUOP_AGENT_CDI_INJECT_RUNC_ARGS_H_
