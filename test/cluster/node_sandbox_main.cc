// gpuop-node-sandbox: the namespaces a real test node lives in.
//
//   gpuop-node-sandbox init --ready-file F [--bind HOST_DIR=NODE_PATH]... [--private-dev]
//                           [--pci-bus FAKE_SYSFS=STAGE_DIR] [--proc-driver DIR]
//   gpuop-node-sandbox exec --init-pid PID [--restart-always] -- PROGRAM [ARG]...
//
// `init` makes a private mount namespace (everything private, then shared again so that
// Bidirectional and HostToContainer volumes work inside it without reaching the machine), mounts
// each HOST_DIR over NODE_PATH (the paths a real node has: /var/lib/kubelet, /etc/containerd,
// /etc/cdi, /run, ...), optionally a /dev of its own (a tmpfs with the basic devices, so what a
// node test creates there never touches the machine's /dev), and then starts a PID namespace
// whose first process only reaps. It writes that process's PID (as this machine sees it) to F
// once everything is mounted. When that process ends, the kernel kills every process left in
// the namespace (containers and shims included), and the mounts vanish with the last of them:
// a stopped, failed or killed node leaves nothing behind.
//
// --pci-bus gives the node a SIMULATED PCI bus: FAKE_SYSFS is a fake sysfs tree (bus/pci and the
// devices/pci<domain>:<bus> directories its devices live in, as test/fakes/sysfs writes them).
// Inside the node, /sys/bus/pci is that tree's, and its device directories join the machine's
// own in /sys/devices, so the fake's relative links (bus/pci/devices/X ->
// ../../../devices/pci0000:18/X) resolve as they do on a real node. Everything else in /sys
// (cgroups, CPUs, NUMA nodes, other buses) stays the machine's. Built on a tmpfs at STAGE_DIR.
//
// --proc-driver mounts DIR over the node's /proc/driver, where the SIMULATED driver publishes the
// kernel module's MIG capability files (test/fakes/driver/proc_entries.h).
//
// `exec` runs PROGRAM inside those namespaces (containerd and the kubelet), forwarding SIGTERM,
// SIGINT and SIGHUP to it and exiting as it exits. The program is killed if this process dies.
// With --restart-always it behaves like a systemd unit with Restart=always (upstream's
// containerd.service): a program that exits while nobody asked this process to stop is started
// again after a second; that is how a node's containerd comes back after a configuration
// change that stops it (a SIGHUP, which containerd does not catch).
//
// Test infrastructure: nothing here is part of gpuop.
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "gpuop-node-sandbox: %s: %s\n", what.c_str(), std::strerror(errno));
  std::_Exit(125);
}

void Usage() {
  std::fprintf(stderr,
               "usage: gpuop-node-sandbox init --ready-file F [--bind HOST_DIR=NODE_PATH]... "
               "[--private-dev] [--pci-bus FAKE_SYSFS=STAGE_DIR] [--proc-driver DIR]\n"
               "       gpuop-node-sandbox exec --init-pid PID [--restart-always] -- PROGRAM "
               "[ARG]...\n");
}

// mkdir -p; existing directories are fine.
void MakeDirs(const std::string& path) {
  std::string prefix;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    prefix = path.substr(0, pos);
    if (prefix.empty()) continue;
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) Die("mkdir " + prefix);
  }
}

void Mount(const char* source, const std::string& target, const char* type, unsigned long flags,
           const char* data = nullptr) {
  if (mount(source, target.c_str(), type, flags, data) != 0) {
    Die("mount " + std::string(source != nullptr ? source : "") + " on " + target);
  }
}

// A /dev of the node's own: the devices containers and the kubelet expect, a devpts instance and
// a /dev/shm. Device nodes a test creates later (a simulated driver's) land here.
void PrivateDev() {
  Mount("tmpfs", "/dev", "tmpfs", MS_NOSUID, "mode=0755,size=16m");
  struct Device {
    const char* name;
    unsigned major, minor;
    mode_t mode;
  };
  const Device devices[] = {{"null", 1, 3, 0666},   {"zero", 1, 5, 0666},    {"full", 1, 7, 0666},
                            {"random", 1, 8, 0666}, {"urandom", 1, 9, 0666}, {"kmsg", 1, 11, 0644},
                            {"tty", 5, 0, 0666}};
  for (const Device& d : devices) {
    const std::string path = std::string("/dev/") + d.name;
    if (mknod(path.c_str(), S_IFCHR | d.mode, makedev(d.major, d.minor)) != 0) {
      Die("mknod " + path);
    }
    chmod(path.c_str(), d.mode);
  }
  MakeDirs("/dev/pts");
  Mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
        "newinstance,ptmxmode=0666,mode=620");
  if (symlink("pts/ptmx", "/dev/ptmx") != 0) Die("symlink /dev/ptmx");
  MakeDirs("/dev/shm");
  Mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=64m");
  const char* links[][2] = {{"/proc/self/fd", "/dev/fd"},
                            {"/proc/self/fd/0", "/dev/stdin"},
                            {"/proc/self/fd/1", "/dev/stdout"},
                            {"/proc/self/fd/2", "/dev/stderr"}};
  for (const auto& link : links) {
    if (symlink(link[0], link[1]) != 0) Die(std::string("symlink ") + link[1]);
  }
}

bool IsDir(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    names.push_back(entry.path().filename().string());
  }
  return names;
}

// Fills `stage` (a directory on a tmpfs) with `real`'s entries, each bound from `real`, and
// `fake`'s, each bound from `fake`; on a name both have, a directory is merged one level further
// down while `depth` allows, and otherwise `fake`'s wins. Only directories are taken: the top
// levels of sysfs hold nothing else.
void Merge(const std::string& real, const std::string& fake, const std::string& stage, int depth) {
  std::set<std::string> names;
  for (const std::string& n : Entries(real)) names.insert(n);
  for (const std::string& n : Entries(fake)) names.insert(n);
  for (const std::string& name : names) {
    const std::string r = real + "/" + name, f = fake + "/" + name, target = stage + "/" + name;
    const bool in_real = IsDir(r), in_fake = IsDir(f);
    if (!in_real && !in_fake) continue;
    if (mkdir(target.c_str(), 0755) != 0) Die("mkdir " + target);
    if (in_real && in_fake && depth > 0) {
      Merge(r, f, target, depth - 1);
    } else {
      Mount((in_fake ? f : r).c_str(), target, nullptr, MS_BIND | MS_REC);
    }
  }
}

// /sys/bus and /sys/devices with the fake PCI bus of `fake` (see --pci-bus above).
void SimulatedPciBus(const std::string& fake, const std::string& stage) {
  for (const char* dir : {"bus/pci", "devices"}) {
    if (!IsDir(fake + "/" + dir)) {
      errno = ENOENT;
      Die("--pci-bus: " + fake + "/" + dir);
    }
  }
  MakeDirs(stage);
  Mount("tmpfs", stage, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m");
  for (const char* top : {"bus", "devices"}) {
    const std::string target = stage + "/" + top;
    if (mkdir(target.c_str(), 0755) != 0) Die("mkdir " + target);
    // bus/<name>: the fake's pci replaces the machine's; devices/<root bus>: the fake's join.
    Merge(std::string("/sys/") + top, fake + "/" + top, target, 0);
  }
  for (const char* top : {"bus", "devices"}) {
    Mount((stage + "/" + top).c_str(), std::string("/sys/") + top, nullptr, MS_BIND | MS_REC);
  }
}

// The first process of the PID namespace: reaps orphans until told to stop. Returning ends the
// namespace and everything in it.
int ReaperLoop() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGCHLD}) sigaddset(&set, sig);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  while (true) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) continue;
    if (sig == SIGCHLD) {
      while (waitpid(-1, nullptr, WNOHANG) > 0) {
      }
      continue;
    }
    return 0;
  }
}

volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_stopping = 0;

void Forward(int sig) {
  g_stopping = 1;
  if (g_child > 0) kill(g_child, sig);
}

void ForwardTerminationSignals() {
  struct sigaction action {};
  action.sa_handler = Forward;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaction(sig, &action, nullptr);
}

int WaitFor(pid_t child) {
  g_child = child;
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) Die("waitpid");
  }
  g_child = 0;
  return status;
}

[[noreturn]] void ExitLike(int status) {
  if (WIFSIGNALED(status)) {
    signal(WTERMSIG(status), SIG_DFL);
    raise(WTERMSIG(status));
    std::_Exit(128 + WTERMSIG(status));
  }
  std::_Exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

// Waits for `child`, forwarding termination signals, and exits as it did.
[[noreturn]] void WaitAndExitLike(pid_t child) {
  ForwardTerminationSignals();
  ExitLike(WaitFor(child));
}

// "/A=/B" as (/A, /B); false, with a message naming `flag` and `want`, for anything else.
bool ParsePathPair(const std::string& flag, const std::string& spec, const char* want,
                   std::pair<std::string, std::string>& out) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || spec[0] != '/' || eq + 1 >= spec.size() || spec[eq + 1] != '/') {
    std::fprintf(stderr, "gpuop-node-sandbox: %s %s: want %s\n", flag.c_str(), spec.c_str(), want);
    return false;
  }
  out = {spec.substr(0, eq), spec.substr(eq + 1)};
  return true;
}

int Init(int argc, char** argv) {
  std::string ready_file;
  std::vector<std::pair<std::string, std::string>> binds;
  bool private_dev = false;
  std::string fake_sysfs, sysfs_stage, proc_driver;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--ready-file" && i + 1 < argc) {
      ready_file = argv[++i];
    } else if (arg == "--bind" && i + 1 < argc) {
      std::pair<std::string, std::string> bind;
      if (!ParsePathPair(arg, argv[++i], "HOST_DIR=NODE_PATH", bind)) return 2;
      binds.push_back(std::move(bind));
    } else if (arg == "--proc-driver" && i + 1 < argc) {
      proc_driver = argv[++i];
    } else if (arg == "--private-dev") {
      private_dev = true;
    } else if (arg == "--pci-bus" && i + 1 < argc) {
      std::pair<std::string, std::string> bus;
      if (!ParsePathPair(arg, argv[++i], "FAKE_SYSFS=STAGE_DIR", bus)) return 2;
      fake_sysfs = bus.first;
      sysfs_stage = bus.second;
    } else {
      Usage();
      return 2;
    }
  }
  if (ready_file.empty()) {
    Usage();
    return 2;
  }
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) Die("prctl");
  if (!proc_driver.empty()) MakeDirs(proc_driver);
  if (unshare(CLONE_NEWNS) != 0) Die("unshare(CLONE_NEWNS)");
  Mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE);
  for (const auto& [host, node] : binds) {
    MakeDirs(host);
    MakeDirs(node);
    Mount(host.c_str(), node, nullptr, MS_BIND | MS_REC);
  }
  if (private_dev) PrivateDev();
  if (!fake_sysfs.empty()) SimulatedPciBus(fake_sysfs, sysfs_stage);
  // New peer groups of this namespace's own: propagation works inside, never to the machine.
  Mount(nullptr, "/", nullptr, MS_REC | MS_SHARED);
  if (unshare(CLONE_NEWPID) != 0) Die("unshare(CLONE_NEWPID)");

  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) Die("pipe");
  const pid_t child = fork();
  if (child < 0) Die("fork");
  if (child == 0) {
    close(ready[0]);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) Die("prctl");
    // A /proc of the new PID namespace, so the node's processes see the node's processes.
    Mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC);
    // The SIMULATED kernel module's files (test/fakes/driver/proc_entries.h) as /proc/driver.
    if (!proc_driver.empty()) Mount(proc_driver.c_str(), "/proc/driver", nullptr, MS_BIND);
    (void)!write(ready[1], "1", 1);
    close(ready[1]);
    return ReaperLoop();
  }
  close(ready[1]);
  char byte = 0;
  if (read(ready[0], &byte, 1) != 1) {
    std::fprintf(stderr, "gpuop-node-sandbox: the namespace's first process failed\n");
    WaitAndExitLike(child);
  }
  close(ready[0]);
  const std::string tmp = ready_file + ".tmp";
  FILE* out = std::fopen(tmp.c_str(), "w");
  if (out == nullptr) Die("open " + tmp);
  std::fprintf(out, "%d\n", static_cast<int>(child));
  if (std::fclose(out) != 0 || std::rename(tmp.c_str(), ready_file.c_str()) != 0) {
    Die("write " + ready_file);
  }
  WaitAndExitLike(child);
}

int Exec(int argc, char** argv) {
  long init_pid = 0;
  bool restart_always = false;
  int i = 0;
  for (; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--init-pid" && i + 1 < argc) {
      init_pid = std::strtol(argv[++i], nullptr, 10);
    } else if (arg == "--restart-always") {
      restart_always = true;
    } else if (arg == "--") {
      ++i;
      break;
    } else {
      Usage();
      return 2;
    }
  }
  if (init_pid <= 0 || i >= argc) {
    Usage();
    return 2;
  }
  char cwd[4096];
  if (getcwd(cwd, sizeof(cwd)) == nullptr) Die("getcwd");
  // Both before either setns: once in the node's mount namespace, /proc is the node's.
  int fds[2];
  const char* names[2] = {"mnt", "pid"};
  for (int n = 0; n < 2; ++n) {
    const std::string path = "/proc/" + std::to_string(init_pid) + "/ns/" + names[n];
    fds[n] = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fds[n] < 0) Die("open " + path);
  }
  for (int n = 0; n < 2; ++n) {
    if (setns(fds[n], 0) != 0) Die(std::string("setns ") + names[n]);
    close(fds[n]);
  }
  if (chdir(cwd) != 0) Die(std::string("chdir ") + cwd);
  ForwardTerminationSignals();
  while (true) {
    const pid_t child = fork();
    if (child < 0) Die("fork");
    if (child == 0) {
      for (int sig : {SIGTERM, SIGINT, SIGHUP}) signal(sig, SIG_DFL);
      // (getppid() is 0 here: the parent is outside the child's PID namespace.)
      if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) Die("prctl");
      execv(argv[i], argv + i);
      Die(std::string("exec ") + argv[i]);
    }
    const int status = WaitFor(child);
    if (!restart_always || g_stopping) ExitLike(status);
    std::fprintf(stderr, "gpuop-node-sandbox: %s exited (status %d); starting it again in 1s\n",
                 argv[i], status);
    sleep(1);
    if (g_stopping) ExitLike(status);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    Usage();
    return 2;
  }
  const std::string mode = argv[1];
  if (mode == "init") return Init(argc - 2, argv + 2);
  if (mode == "exec") return Exec(argc - 2, argv + 2);
  Usage();
  return 2;
}
