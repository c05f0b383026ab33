// SIMULATED nvidia-cuda-mps-control (README.md): a stand-in for NVIDIA's MPS control program
// with the behaviour gpuop's MPS component relies on, strict where the real one is strict. It
// shares no GPU and starts no MPS server: the daemon only keeps the defaults it was given.
//
//   nvidia-cuda-mps-control -d   starts a control daemon in the background and exits 0 once it
//                                listens on <CUDA_MPS_PIPE_DIRECTORY>/control; 1 when a daemon
//                                already answers there
//   nvidia-cuda-mps-control      sends each line of standard input to that daemon and prints the
//                                answers; 1 when no daemon answers or a command fails
//
// Commands: set_default_active_thread_percentage <1-100>, get_default_active_thread_percentage,
// set_default_device_pinned_mem_limit <device> <n>[B|K|M|G], get_default_device_pinned_mem_limit
// <device>, quit. Anything else is an error. The daemon appends every command it accepted to
// <CUDA_MPS_LOG_DIRECTORY>/control.log (the real daemon logs there too), which is how tests see
// the limits it was given.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

namespace {

std::string Env(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

std::string PipeDir() { return Env("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps"); }
std::string LogDir() { return Env("CUDA_MPS_LOG_DIRECTORY", "/var/log/nvidia-mps"); }
std::string SocketPath() { return PipeDir() + "/control"; }

bool Address(const std::string& path, sockaddr_un& addr) {
  std::memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) return false;
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  return true;
}

// A connection to the daemon of the pipe directory, or -1.
int Connect() {
  sockaddr_un addr;
  if (!Address(SocketPath(), addr)) return -1;
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

std::string ReadAll(int fd) {
  std::string out;
  char buffer[512];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0) out.append(buffer, static_cast<size_t>(n));
  return out;
}

void WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

bool IsNumber(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return s.size() <= 9;
}

// A memory size as the real program takes it: digits and an optional unit.
bool IsMemory(const std::string& s) {
  if (s.empty()) return false;
  const char last = s.back();
  const bool unit = last == 'B' || last == 'K' || last == 'M' || last == 'G';
  return IsNumber(unit ? s.substr(0, s.size() - 1) : s);
}

struct State {
  int thread_percentage = 100;
  std::map<std::string, std::string> pinned;  // device -> limit
};

// The daemon's answer to one command: "ok <text>" or "error <text>"; sets `quit`.
std::string Handle(State& state, const std::string& line, bool& quit) {
  const std::vector<std::string> w = Words(line);
  if (w.empty()) return "error empty command";
  if (w[0] == "quit" && w.size() == 1) {
    quit = true;
    return "ok ";
  }
  if (w[0] == "get_default_active_thread_percentage" && w.size() == 1) {
    return "ok " + std::to_string(state.thread_percentage) + ".0";
  }
  if (w[0] == "set_default_active_thread_percentage" && w.size() == 2 && IsNumber(w[1])) {
    const int value = std::atoi(w[1].c_str());
    if (value < 1 || value > 100) return "error active thread percentage out of range";
    state.thread_percentage = value;
    return "ok ";
  }
  if (w[0] == "set_default_device_pinned_mem_limit" && w.size() == 3 && IsNumber(w[1]) &&
      IsMemory(w[2])) {
    state.pinned[w[1]] = w[2];
    return "ok ";
  }
  if (w[0] == "get_default_device_pinned_mem_limit" && w.size() == 2 && IsNumber(w[1])) {
    auto it = state.pinned.find(w[1]);
    return "ok " + (it == state.pinned.end() ? std::string("0") : it->second);
  }
  return "error unknown or malformed command: " + line;
}

[[noreturn]] void Serve(int listener) {
  State state;
  std::ofstream log(LogDir() + "/control.log", std::ios::app);
  log << "[SIMULATED] control daemon started for " << PipeDir() << "\n" << std::flush;
  for (;;) {
    // A daemon whose socket is gone (its pipe directory removed) has nobody left to serve.
    pollfd p{.fd = listener, .events = POLLIN, .revents = 0};
    if (poll(&p, 1, 1000) <= 0) {
      struct stat st;
      if (stat(SocketPath().c_str(), &st) != 0) _exit(0);
      continue;
    }
    const int client = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    const std::string request = ReadAll(client);
    bool quit = false;
    const std::string answer = Handle(state, request, quit);
    if (answer.rfind("ok", 0) == 0) log << request << "\n" << std::flush;
    WriteAll(client, answer);
    close(client);
    if (quit) {
      unlink(SocketPath().c_str());
      log << "[SIMULATED] control daemon exiting\n" << std::flush;
      _exit(0);
    }
  }
}

int StartDaemon() {
  const int existing = Connect();
  if (existing >= 0) {
    close(existing);
    std::cerr << "An instance of this daemon is already running\n";
    return 1;
  }
  struct stat st;
  if (stat(PipeDir().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
      stat(LogDir().c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    std::cerr << "The pipe directory " << PipeDir() << " and the log directory " << LogDir()
              << " must exist\n";
    return 1;
  }
  sockaddr_un addr;
  if (!Address(SocketPath(), addr)) {
    std::cerr << "The pipe directory path is too long\n";
    return 1;
  }
  unlink(SocketPath().c_str());  // a socket no daemon answers on
  const int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listener, 16) != 0) {
    std::cerr << "Cannot listen on " << SocketPath() << ": " << std::strerror(errno) << "\n";
    return 1;
  }
  // The daemon tells its parent once it has a session of its own, so nothing that ends the
  // parent's process group (a caller finishing what its child left behind) reaches it.
  int detached[2];
  if (pipe2(detached, O_CLOEXEC) != 0) return 1;
  const pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    close(detached[0]);
    setsid();
    WriteAll(detached[1], "d");
    close(detached[1]);
    const int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
      dup2(null, STDIN_FILENO);
      dup2(null, STDOUT_FILENO);
      dup2(null, STDERR_FILENO);
    }
    signal(SIGPIPE, SIG_IGN);
    Serve(listener);
  }
  close(listener);
  close(detached[1]);
  char byte = 0;
  const bool ok = read(detached[0], &byte, 1) == 1;
  close(detached[0]);
  return ok ? 0 : 1;
}

int Client() {
  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  int code = 0;
  std::istringstream lines(input);
  for (std::string line; std::getline(lines, line);) {
    if (Words(line).empty()) continue;
    const int fd = Connect();
    if (fd < 0) {
      std::cerr << "Cannot find MPS control daemon process\n";
      return 1;
    }
    WriteAll(fd, line);
    shutdown(fd, SHUT_WR);
    const std::string answer = ReadAll(fd);
    close(fd);
    if (answer.rfind("ok ", 0) == 0) {
      if (answer.size() > 3) std::cout << answer.substr(3) << "\n";
    } else {
      std::cerr << (answer.size() > 6 ? answer.substr(6) : "no answer from the daemon") << "\n";
      code = 1;
    }
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "-d") return StartDaemon();
  if (argc == 1) return Client();
  std::cerr << "usage: nvidia-cuda-mps-control [-d]\n";
  return 1;
}
