#include "agent/cdi/inject/runc_args.h"

#include <array>
#include <optional>
#include <string_view>

namespace gpuop::agent::cdi::inject {
namespace {

// A command-line word split into a flag name (without its dashes) and an inline "=value".
struct Flag {
  std::string_view name;
  std::optional<std::string_view> value;
};

// The flag `word` spells, or nullopt when it is not a flag ("-" alone and "--" are not).
std::optional<Flag> SplitFlag(std::string_view word) {
  if (word.size() < 2 || word[0] != '-' || word == "--") return std::nullopt;
  word.remove_prefix(word[1] == '-' ? 2 : 1);
  if (word.empty() || word[0] == '-' || word[0] == '=') return std::nullopt;
  Flag flag;
  if (const size_t equals = word.find('='); equals != std::string_view::npos) {
    flag.value = word.substr(equals + 1);
    word = word.substr(0, equals);
  }
  flag.name = word;
  return flag;
}

constexpr std::array<std::string_view, 2> kGlobalBooleans = {"debug", "systemd-cgroup"};
constexpr std::array<std::string_view, 5> kGlobalValued = {"log", "log-format", "root", "criu",
                                                           "rootless"};
// The flags of `runc create` and `runc run` that take a value; the others are booleans.
constexpr std::array<std::string_view, 5> kCreateValued = {"bundle", "b", "console-socket",
                                                           "pid-file", "preserve-fds"};
// runc run's value flags beyond create's.
constexpr std::array<std::string_view, 1> kRunValued = {"pidfd-socket"};

template <size_t N>
bool Contains(const std::array<std::string_view, N>& names, std::string_view name) {
  for (std::string_view known : names) {
    if (known == name) return true;
  }
  return false;
}

// Finds the bundle among the arguments of `create` or `run` (those after the subcommand).
std::string FindBundle(const std::vector<std::string>& args, size_t first) {
  std::string bundle = ".";
  for (size_t i = first; i < args.size(); ++i) {
    if (args[i] == "--") break;
    const std::optional<Flag> flag = SplitFlag(args[i]);
    if (!flag) continue;  // the container id
    const bool valued = Contains(kCreateValued, flag->name) || Contains(kRunValued, flag->name);
    if (!valued) continue;
    std::string value;
    if (flag->value) {
      value = std::string(*flag->value);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      break;
    }
    if (flag->name == "bundle" || flag->name == "b") bundle = value;
  }
  return bundle;
}

}  // namespace

RuncInvocation ParseRuncArgs(const std::vector<std::string>& args) {
  RuncInvocation out;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::optional<Flag> flag = SplitFlag(args[i]);
    if (!flag) break;
    if (Contains(kGlobalBooleans, flag->name)) continue;
    if (!Contains(kGlobalValued, flag->name)) return RuncInvocation{};  // not ours to interpret
    std::string value;
    if (flag->value) {
      value = std::string(*flag->value);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return RuncInvocation{};
    }
    if (flag->name == "log") out.log_path = value;
    if (flag->name == "log-format") out.log_format = value;
  }
  if (i >= args.size() || args[i] == "--") return out;
  out.subcommand = args[i];
  if (out.subcommand == "create" || out.subcommand == "run") out.bundle = FindBundle(args, i + 1);
  return out;
}

}  // namespace gpuop::agent::cdi::inject
