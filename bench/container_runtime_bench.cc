// Cost of gpuop-container-runtime on a container's create: what it adds before runc runs.
//   in-process   InjectIntoBundle alone (read the specs, edit config.json, write it back) for the
//                management devices of an 8-GPU node, p50/p99 over many bundles;
//   whole program  the static binary started as containerd's shim starts runc, with /bin/true
//                standing in for runc, against /bin/true started the same way: the difference is
//                the wrapper's share of a container start.
// Usage: container_runtime_bench [--bundles N]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent/cdi/inject/inject.h"

namespace {

namespace fs = std::filesystem;
namespace inject = gpuop::agent::cdi::inject;

// The management spec of a node with eight GPUs (agent/cdi/management.h), its nodes standing for
// the real ones with character devices every machine has.
std::string ManagementSpec() {
  std::string nodes = R"({"path": "/dev/nvidiactl", "hostPath": "/dev/null"})";
  for (int i = 0; i < 8; ++i) {
    absl::StrAppend(&nodes, R"(, {"path": "/dev/nvidia)", i, R"(", "hostPath": "/dev/full"})");
  }
  return absl::StrCat(R"({"cdiVersion": "0.5.0", "kind": "management.gpuop.io/gpu", "devices": [)",
                      R"({"name": "all", "containerEdits": {"deviceNodes": [)", nodes, "]}},",
                      R"({"name": "mig-monitor", "containerEdits": {"deviceNodes": [)",
                      R"({"path": "/dev/nvidia-caps/nvidia-cap2", "hostPath": "/dev/full"}]}}]})");
}

// A config.json as containerd writes it for a gpuop component, less the fields no edit touches.
constexpr char kConfig[] =
    R"({"ociVersion": "1.2.0", "process": {"user": {"uid": 0, "gid": 0}, "args": ["gpuop-agent"],)"
    R"( "env": ["PATH=/usr/bin", "GPUOP_CDI_DEVICES=management.gpuop.io/gpu=all,)"
    R"(management.gpuop.io/gpu=mig-monitor"], "capabilities": {"effective": ["CAP_SYS_ADMIN"],)"
    R"( "bounding": ["CAP_SYS_ADMIN"]}}, "root": {"path": "rootfs", "readonly": true},)"
    R"( "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"}],)"
    R"( "linux": {"resources": {"devices": [{"allow": false, "access": "rwm"}]}}})";

double Percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  return values[static_cast<size_t>(p * static_cast<double>(values.size() - 1))];
}

// Microseconds to run `argv` to its end, with `env` added.
double RunMicros(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  const absl::Time start = absl::Now();
  const pid_t pid = fork();
  if (pid == 0) {
    for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "%s failed\n", argv[0].c_str());
    std::exit(1);
  }
  return absl::ToDoubleMicroseconds(absl::Now() - start);
}

}  // namespace

int main(int argc, char** argv) {
  int bundles = 500;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--bundles") == 0) bundles = std::atoi(argv[i + 1]);
  }
  const fs::path dir = fs::temp_directory_path() / absl::StrCat("gpuop-runtime-bench-", getpid());
  fs::create_directories(dir / "cdi");
  std::ofstream(dir / "cdi" / "gpuop-management.json") << ManagementSpec();
  const inject::InjectOptions options{.spec_dirs = {(dir / "cdi").string()}};

  std::vector<double> in_process, wrapper, bare;
  for (int i = 0; i < bundles; ++i) {
    const fs::path bundle = dir / absl::StrCat("b", i);
    fs::create_directories(bundle);
    std::ofstream(bundle / "config.json") << kConfig;
    const absl::Time start = absl::Now();
    inject::StatusOr<inject::InjectResult> result =
        inject::InjectIntoBundle(bundle.string(), options);
    in_process.push_back(absl::ToDoubleMicroseconds(absl::Now() - start));
    if (!result.ok() || *result != inject::InjectResult::kRewritten) {
      std::fprintf(stderr, "inject: %s\n",
                   result.ok() ? "nothing rewritten" : result.status().message().c_str());
      return 1;
    }
    std::ofstream(bundle / "config.json", std::ios::trunc) << kConfig;
    wrapper.push_back(RunMicros(
        {GPUOP_CONTAINER_RUNTIME, "create", "--bundle", bundle.string(), absl::StrCat("c", i)},
        {absl::StrCat("GPUOP_CDI_SPEC_DIRS=", (dir / "cdi").string()), "GPUOP_RUNC=/bin/true"}));
    bare.push_back(
        RunMicros({"/bin/true", "create", "--bundle", bundle.string(), absl::StrCat("c", i)}, {}));
  }
  fs::remove_all(dir);
  std::printf("%-44s %10s %10s\n", "", "p50 us", "p99 us");
  std::printf("%-44s %10.0f %10.0f\n", "InjectIntoBundle (8 GPUs + MIG monitor)",
              Percentile(in_process, 0.5), Percentile(in_process, 0.99));
  std::printf("%-44s %10.0f %10.0f\n", "gpuop-container-runtime create -> /bin/true",
              Percentile(wrapper, 0.5), Percentile(wrapper, 0.99));
  std::printf("%-44s %10.0f %10.0f\n", "/bin/true alone (process start)", Percentile(bare, 0.5),
              Percentile(bare, 0.99));
  return 0;
}
