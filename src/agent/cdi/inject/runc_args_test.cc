#include "agent/cdi/inject/runc_args.h"

#include <gtest/gtest.h>

namespace gpuop::agent::cdi::inject {

void PrintTo(const RuncInvocation& i, std::ostream* out) {
  *out << "{subcommand=" << i.subcommand << " bundle=" << i.bundle << " log=" << i.log_path
       << " log_format=" << i.log_format << "}";
}

namespace {

struct Case {
  const char* what;
  std::vector<std::string> args;
  RuncInvocation want;
};

TEST(ParseRuncArgsTest, Table) {
  const std::vector<Case> cases = {
      {"what containerd's runc shim runs",
       {"--root", "/run/containerd/runc/k8s.io", "--log", "/run/c/log.json", "--log-format", "json",
        "--systemd-cgroup", "create", "--bundle", "/run/c/b", "--pid-file", "/run/c/init.pid",
        "c1"},
       {"create", "/run/c/b", "/run/c/log.json", "json"}},
      {"flags with =, single dashes and -b",
       {"-root=/r", "--log=/l.json", "-log-format=json", "--debug", "create", "--pid-file=/p", "-b",
        "/b", "c1"},
       {"create", "/b", "/l.json", "json"}},
      {"--bundle=",
       {"create", "--no-pivot", "--console-socket", "/s.sock", "--bundle=/b2", "c1"},
       {"create", "/b2", "", ""}},
      {"-bundle with a single dash", {"run", "-bundle", "/b3", "-d", "c1"}, {"run", "/b3", "", ""}},
      {"a flag after the container id (runc reorders them)",
       {"create", "c1", "--bundle", "/b4"},
       {"create", "/b4", "", ""}},
      {"the bundle defaults to the current directory", {"create", "c1"}, {"create", ".", "", ""}},
      {"a --pid-file value that looks like -b is a value",
       {"create", "--pid-file", "-b", "c1"},
       {"create", ".", "", ""}},
      {"boolean globals with values",
       {"--debug=false", "--systemd-cgroup=true", "start", "c1"},
       {"start", "", "", ""}},
      {"other subcommands have no bundle",
       {"--root", "/r", "delete", "--force", "c1"},
       {"delete", "", "", ""}},
      {"the rest of the global valued flags",
       {"--criu", "/usr/sbin/criu", "--rootless=auto", "--rootless", "false", "state", "c1"},
       {"state", "", "", ""}},
      {"an unknown global flag passes through", {"--new-flag", "x", "create", "c1"}, {}},
      {"a valued global flag at the end", {"--root"}, {}},
      {"no subcommand", {"--debug"}, {}},
      {"nothing", {}, {}},
      {"--version is not a subcommand", {"--version"}, {}},
      {"-- ends the global flags", {"--", "create"}, {}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ParseRuncArgs(c.args), c.want) << c.what;
  }
}

}  // namespace
}  // namespace gpuop::agent::cdi::inject
