#include "agent/cdi/hook/hook.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include <fnmatch.h>
#include <sys/stat.h>

#include "agent/cdi/hook/root_dir.h"

namespace gpuop::agent::cdi::hook {
namespace {

constexpr int kOk = 0;
constexpr int kFailed = 1;
constexpr int kUsage = 2;

constexpr const char* kLdconfigCandidates[] = {"/sbin/ldconfig.real", "/sbin/ldconfig",
                                               "/usr/sbin/ldconfig.real", "/usr/sbin/ldconfig"};

// The directories glibc's loader and ldconfig search without being told (nvidia-cdi-hook's
// lists, taken from `ld.so --help` on Debian-like and other images).
const std::vector<std::string>& SystemDirs(bool debian_like) {
  static const std::vector<std::string> debian = {"/lib/x86_64-linux-gnu",
                                                  "/usr/lib/x86_64-linux-gnu",
                                                  "/lib/aarch64-linux-gnu",
                                                  "/usr/lib/aarch64-linux-gnu",
                                                  "/lib",
                                                  "/usr/lib"};
  static const std::vector<std::string> other = {"/lib64", "/usr/lib64"};
  return debian_like ? debian : other;
}

constexpr char kUsageText[] =
    "usage: gpuop-cdi-hook <command> [flags]   (an OCI hook: the container's state on stdin)\n"
    "  create-symlinks --link <target>::<link> ...\n"
    "  enable-cuda-compat --host-driver-version=<version>\n"
    "  update-ldcache --folder <dir> ...\n";

using Flags = std::map<std::string, std::vector<std::string>>;

// Parses "--name value" and "--name=value" for the names in `known`. Usage errors go to `log`.
bool ParseFlags(const std::vector<std::string>& args, const std::set<std::string>& known,
                Flags& flags, std::ostream& log) {
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("--", 0) != 0) {
      log << "gpuop-cdi-hook " << args[0] << ": unexpected argument \"" << arg << "\"\n";
      return false;
    }
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    if (!known.contains(name)) {
      log << "gpuop-cdi-hook " << args[0] << ": unknown flag --" << name << "\n";
      return false;
    }
    if (eq != std::string::npos) {
      flags[name].push_back(arg.substr(eq + 1));
    } else if (i + 1 < args.size()) {
      flags[name].push_back(args[++i]);
    } else {
      log << "gpuop-cdi-hook " << args[0] << ": --" << name << " needs a value\n";
      return false;
    }
  }
  return true;
}

StatusOr<RootDir> OpenContainerRoot(const HookEnvironment& env) {
  std::string text;
  char buffer[4096];
  while (env.state->read(buffer, sizeof(buffer)) || env.state->gcount() > 0) {
    text.append(buffer, static_cast<size_t>(env.state->gcount()));
    if (text.size() > kMaxStateSize) return Status::Error("the OCI state on stdin is too large");
  }
  StatusOr<ContainerState> state = ParseContainerState(text, env.read_file);
  if (!state.ok()) return state.status();
  return RootDir::Open(state->root);
}

int Fail(std::ostream& log, const std::string& command, const Status& status) {
  log << "gpuop-cdi-hook " << command << ": " << status.message() << "\n";
  return kFailed;
}

bool IsAbsolute(const std::string& path) { return !path.empty() && path.front() == '/'; }

std::string Normal(const std::string& path) {
  std::string out = std::filesystem::path(path).lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

int CreateSymlinks(const std::vector<std::string>& args, const HookEnvironment& env) {
  std::ostream& log = *env.log;
  Flags flags;
  if (!ParseFlags(args, {"link"}, flags, log)) return kUsage;
  std::vector<std::pair<std::string, std::string>> links;
  std::set<std::string> seen;
  for (const std::string& spec : flags["link"]) {
    const size_t sep = spec.find("::");
    if (sep == std::string::npos || spec.find("::", sep + 2) != std::string::npos || sep == 0 ||
        !IsAbsolute(spec.substr(sep + 2)) || spec.find('\0') != std::string::npos) {
      log << "gpuop-cdi-hook create-symlinks: --link \"" << spec
          << "\" is not <target>::<absolute link path>\n";
      return kUsage;
    }
    if (seen.insert(spec).second) links.emplace_back(spec.substr(0, sep), spec.substr(sep + 2));
  }
  StatusOr<RootDir> root = OpenContainerRoot(env);
  if (!root.ok()) return Fail(log, args[0], root.status());
  for (const auto& [target, link] : links) {
    StatusOr<bool> made = root->Symlink(target, link);
    if (!made.ok()) return Fail(log, args[0], made.status());
  }
  return kOk;
}

// The leading number of "570.86.15" (570), or -1.
int Major(const std::string& version) {
  size_t digits = 0;
  while (digits < version.size() && digits < 9 && version[digits] >= '0' &&
         version[digits] <= '9') {
    ++digits;
  }
  if (digits == 0 || (digits < version.size() && version[digits] != '.')) return -1;
  return std::stoi(version.substr(0, digits));
}

int EnableCudaCompat(const std::vector<std::string>& args, const HookEnvironment& env) {
  std::ostream& log = *env.log;
  Flags flags;
  if (!ParseFlags(args, {"host-driver-version"}, flags, log)) return kUsage;
  const std::vector<std::string>& versions = flags["host-driver-version"];
  const int host_major = versions.empty() ? -1 : Major(versions.back());
  if (host_major < 0) {
    log << "gpuop-cdi-hook enable-cuda-compat: no usable --host-driver-version; nothing to do\n";
    return kOk;
  }
  StatusOr<RootDir> root = OpenContainerRoot(env);
  if (!root.ok()) return Fail(log, args[0], root.status());
  auto exists = [&](const char* path, bool directory) -> StatusOr<bool> {
    StatusOr<std::optional<struct stat>> st = root->Stat(path);
    if (!st.ok()) return st.status();
    return st->has_value() && (!directory || S_ISDIR((*st)->st_mode));
  };
  for (const auto& [path, directory] :
       {std::pair{kCudaCompatDir, true}, std::pair{"/etc/ld.so.cache", false},
        std::pair{"/etc/ld.so.conf.d", true}}) {
    StatusOr<bool> there = exists(path, directory);
    if (!there.ok()) return Fail(log, args[0], there.status());
    if (!*there) return kOk;  // nothing to enable, or no ld cache to enable it in
  }
  StatusOr<std::vector<std::string>> names = root->List(kCudaCompatDir);
  if (!names.ok()) return Fail(log, args[0], names.status());
  int compat_major = -1;
  for (const std::string& name : *names) {
    const std::string prefix = "libcuda.so.";
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string version = name.substr(prefix.size());
    if (version.find('.') == std::string::npos) continue;  // libcuda.so.1, not a version
    compat_major = std::max(compat_major, Major(version));
  }
  if (compat_major > host_major) {
    const Status written = root->WriteFile(kCompatConfFile, std::string(kCudaCompatDir) + "\n");
    if (!written.ok()) return Fail(log, args[0], written);
    return kOk;
  }
  StatusOr<bool> removed = root->Remove(kCompatConfFile);  // a stale one from an earlier start
  if (!removed.ok()) return Fail(log, args[0], removed.status());
  return kOk;
}

// The directories the image's ld.so.conf names, following `include` lines (patterns in the
// file name only, relative ones against the including file's directory), except in `skip`.
StatusOr<std::set<std::string>> ConfiguredDirs(const RootDir& root, const std::string& skip) {
  std::set<std::string> dirs;
  std::vector<std::string> files = {"/etc/ld.so.conf"};
  std::set<std::string> read;
  while (!files.empty() && read.size() < 256) {
    const std::string file = files.back();
    files.pop_back();
    if (file == skip || !read.insert(file).second) continue;
    StatusOr<std::optional<std::string>> text = root.ReadFile(file, 1 << 20);
    if (!text.ok()) return text.status();
    if (!text->has_value()) continue;
    std::istringstream lines(**text);
    for (std::string line; std::getline(lines, line);) {
      line = line.substr(0, line.find('#'));
      std::istringstream words(line);
      std::string word;
      if (!(words >> word)) continue;
      if (word == "hwcap") continue;
      if (word == "include") {
        for (std::string pattern; words >> pattern;) {
          if (!IsAbsolute(pattern)) {
            pattern = (std::filesystem::path(file).parent_path() / pattern).string();
          }
          const std::filesystem::path p(pattern);
          StatusOr<std::vector<std::string>> names = root.List(p.parent_path().string());
          if (!names.ok()) return names.status();
          for (const std::string& name : *names) {
            if (fnmatch(p.filename().c_str(), name.c_str(), FNM_PERIOD) == 0) {
              files.push_back((p.parent_path() / name).string());
            }
          }
        }
        continue;
      }
      std::replace_if(
          line.begin(), line.end(), [](char c) { return c == ':' || c == ','; }, ' ');
      std::istringstream entries(line);
      for (std::string dir; entries >> dir;) {
        if (IsAbsolute(dir)) dirs.insert(Normal(dir.substr(0, dir.find('='))));
      }
    }
  }
  return dirs;
}

int UpdateLdcache(const std::vector<std::string>& args, const HookEnvironment& env) {
  std::ostream& log = *env.log;
  Flags flags;
  if (!ParseFlags(args, {"folder", "ldconfig-path"}, flags, log)) {
    return kUsage;
  }
  for (const std::string& folder : flags["folder"]) {
    if (!IsAbsolute(folder) || folder.find('\n') != std::string::npos) {
      log << "gpuop-cdi-hook update-ldcache: --folder \"" << folder
          << "\" is not an absolute path\n";
      return kUsage;
    }
  }
  StatusOr<RootDir> root = OpenContainerRoot(env);
  if (!root.ok()) return Fail(log, args[0], root.status());

  std::string ldconfig;
  for (const char* candidate : kLdconfigCandidates) {
    StatusOr<std::optional<struct stat>> st = root->Stat(candidate);
    if (!st.ok()) return Fail(log, args[0], st.status());
    if (st->has_value() && S_ISREG((*st)->st_mode) && ((*st)->st_mode & 0111) != 0) {
      ldconfig = candidate;
      break;
    }
  }
  if (ldconfig.empty()) return kOk;  // no ldconfig: the image's loader uses the links as they are

  StatusOr<std::optional<struct stat>> debian = root->Stat("/etc/debian_version");
  if (!debian.ok()) return Fail(log, args[0], debian.status());
  StatusOr<std::set<std::string>> configured = ConfiguredDirs(*root, kDriverConfFile);
  if (!configured.ok()) return Fail(log, args[0], configured.status());
  for (const std::string& dir : SystemDirs(debian->has_value())) configured->insert(dir);
  std::string conf;
  for (const std::string& folder : flags["folder"]) {
    if (configured->insert(Normal(folder)).second) conf += Normal(folder) + "\n";
  }
  StatusOr<std::optional<struct stat>> main_conf = root->Stat("/etc/ld.so.conf");
  if (!main_conf.ok()) return Fail(log, args[0], main_conf.status());
  if (!main_conf->has_value()) {
    const Status written = root->WriteFile("/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n");
    if (!written.ok()) return Fail(log, args[0], written);
  }
  if (!conf.empty()) {
    const Status written = root->WriteFile(kDriverConfFile, conf);
    if (!written.ok()) return Fail(log, args[0], written);
  } else if (StatusOr<bool> removed = root->Remove(kDriverConfFile); !removed.ok()) {
    return Fail(log, args[0], removed.status());
  }

  StatusOr<int> code = env.run(root->path(), {ldconfig});
  if (!code.ok()) {
    log << "gpuop-cdi-hook update-ldcache: " << code.status().message()
        << " (the library links are in place; the loader cache is not updated)\n";
  } else if (*code != 0) {
    log << "gpuop-cdi-hook update-ldcache: " << ldconfig << " in " << root->path()
        << " exited with code " << *code << " (the library links are in place)\n";
  }
  return kOk;
}

}  // namespace

int RunHook(const std::vector<std::string>& args, const HookEnvironment& env) {
  std::ostream& log = *env.log;
  try {
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
      log << kUsageText;
      return args.empty() ? kUsage : kOk;
    }
    if (args[0] == "create-symlinks") return CreateSymlinks(args, env);
    if (args[0] == "enable-cuda-compat") return EnableCudaCompat(args, env);
    if (args[0] == "update-ldcache") return UpdateLdcache(args, env);
    log << "gpuop-cdi-hook: unknown command \"" << args[0] << "\"\n" << kUsageText;
    return kUsage;
  } catch (const std::exception& e) {
    log << "gpuop-cdi-hook " << args[0] << ": " << e.what() << "\n";
  } catch (...) {
    log << "gpuop-cdi-hook " << args[0] << ": unexpected error\n";
  }
  return kFailed;
}

}  // namespace gpuop::agent::cdi::hook
