#include "agent/runtime/runtime.h"

#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gpuop::agent::runtime {
namespace {

// A Kubernetes RuntimeClass handler must be a DNS label (RFC 1123).
bool IsDnsLabel(absl::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  for (const char c : s) {
    if (!absl::ascii_islower(c) && !absl::ascii_isdigit(c) && c != '-') return false;
  }
  return s.front() != '-' && s.back() != '-';
}

bool IsAbsolutePath(absl::string_view s) {
  if (s.empty() || s.front() != '/') return false;
  for (const char c : s) {
    if (absl::ascii_iscntrl(c)) return false;
  }
  return true;
}

// IsAbsolutePath, and in normal form (no ".", "..", "//" or trailing '/'): a program's path, which
// is joined under the host root to look for it or install it there, must not climb out of it.
bool IsCleanAbsolutePath(absl::string_view s) {
  if (!IsAbsolutePath(s) || (s.size() > 1 && s.back() == '/')) return false;
  const std::filesystem::path path{std::string(s)};
  return path.lexically_normal() == path;
}

}  // namespace

std::string RuntimeName(Runtime runtime) {
  switch (runtime) {
    case Runtime::kContainerd:
      return "containerd";
    case Runtime::kCrio:
      return "cri-o";
    case Runtime::kDocker:
      return "docker";
  }
  return "unknown";
}

absl::StatusOr<Runtime> ParseRuntime(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "containerd") return Runtime::kContainerd;
  if (lower == "crio" || lower == "cri-o") return Runtime::kCrio;
  if (lower == "docker") return Runtime::kDocker;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown container runtime \"", name, "\"; want containerd, crio or docker"));
}

absl::Status ValidateOptions(const Options& options) {
  if (!options.enable_cdi && !options.add_nvidia_runtime && !options.add_gpuop_runtime) {
    return absl::InvalidArgumentError(
        "runtime options: nothing to configure (enable_cdi, add_nvidia_runtime and "
        "add_gpuop_runtime are all off)");
  }
  if (options.enable_cdi) {
    if (options.cdi_spec_dirs.empty()) {
      return absl::InvalidArgumentError("runtime options: cdi_spec_dirs is empty");
    }
    for (const std::string& dir : options.cdi_spec_dirs) {
      if (!IsAbsolutePath(dir)) {
        return absl::InvalidArgumentError(absl::StrCat("runtime options: cdi_spec_dirs entry \"",
                                                       dir, "\" is not an absolute path"));
      }
    }
  }
  if (options.add_nvidia_runtime) {
    if (!IsDnsLabel(options.runtime_name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("runtime options: runtime_name \"", options.runtime_name,
                       "\" is not a DNS label (lower-case letters, digits and '-', at most 63)"));
    }
    if (!options.runtime_binary.empty() && !IsCleanAbsolutePath(options.runtime_binary)) {
      return absl::InvalidArgumentError(
          absl::StrCat("runtime options: runtime_binary \"", options.runtime_binary,
                       "\" is not a clean absolute path (no '.', '..', '//' or trailing '/')"));
    }
  }
  if (options.add_gpuop_runtime) {
    if (!IsDnsLabel(options.gpuop_runtime_name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("runtime options: gpuop_runtime_name \"", options.gpuop_runtime_name,
                       "\" is not a DNS label (lower-case letters, digits and '-', at most 63)"));
    }
    if (!IsCleanAbsolutePath(options.gpuop_runtime_binary)) {
      return absl::InvalidArgumentError(
          absl::StrCat("runtime options: gpuop_runtime_binary \"", options.gpuop_runtime_binary,
                       "\" is not a clean absolute path (no '.', '..', '//' or trailing '/')"));
    }
    if (options.add_nvidia_runtime && options.gpuop_runtime_name == options.runtime_name) {
      return absl::InvalidArgumentError(absl::StrCat(
          "runtime options: gpuop_runtime_name and runtime_name are both \"", options.runtime_name,
          "\"; gpuop's handler and the nvidia one need different names"));
    }
  }
  if (options.set_as_default && !options.add_nvidia_runtime) {
    return absl::InvalidArgumentError(
        "runtime options: set_as_default requires add_nvidia_runtime");
  }
  return absl::OkStatus();
}

std::string FileStateName(FileState state) {
  switch (state) {
    case FileState::kConfigured:
      return "configured";
    case FileState::kDrifted:
      return "drifted";
    case FileState::kNotConfigured:
      return "not configured";
  }
  return "unknown";
}

bool StatusReport::Configured() const {
  if (restart_pending) return false;
  for (const FileStatus& file : files) {
    if (file.state != FileState::kConfigured) return false;
  }
  return true;
}

std::string StatusReport::Summary() const {
  std::string out;
  for (const FileStatus& file : files) {
    absl::StrAppend(&out, RuntimeName(runtime), ": ", file.path.string(), ": ",
                    FileStateName(file.state));
    if (!file.detail.empty()) absl::StrAppend(&out, " (", file.detail, ")");
    out += '\n';
  }
  if (restart_pending) {
    absl::StrAppend(&out, RuntimeName(runtime),
                    ": restart pending (a change was written but the runtime was not restarted)\n");
  }
  for (const std::string& note : notes) {
    absl::StrAppend(&out, RuntimeName(runtime), ": note: ", note, "\n");
  }
  return out;
}

std::string ChangeReport::Summary() const {
  std::string out = absl::StrCat(RuntimeName(runtime), ": ");
  if (actions.empty()) {
    out += "unchanged";
  } else {
    absl::StrAppend(&out, absl::StrJoin(actions, ", "));
  }
  absl::StrAppend(&out, "; ", restart.empty() ? "no restart" : restart);
  for (const std::string& note : notes) {
    absl::StrAppend(&out, "\n", RuntimeName(runtime), ": note: ", note);
  }
  return out;
}

}  // namespace gpuop::agent::runtime
