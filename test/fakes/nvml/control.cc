#include "test/fakes/nvml/control.h"

#include <algorithm>
#include <iterator>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace gpuop::fakenvml {
namespace {

constexpr off_t kMaxRead = 1 << 20;  // per call; the rest waits for the next one

absl::StatusOr<int> ParseGpu(absl::string_view word) {
  if (word == "all") return -1;
  int gpu = 0;
  if (!absl::SimpleAtoi(word, &gpu) || gpu < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a GPU index or all, got \"", word, "\""));
  }
  return gpu;
}

absl::StatusOr<unsigned int> ParseUint(absl::string_view word, absl::string_view what) {
  unsigned int value = 0;
  if (!absl::SimpleAtoi(word, &value)) {
    return absl::InvalidArgumentError(absl::StrCat("expected ", what, ", got \"", word, "\""));
  }
  return value;
}

}  // namespace

absl::StatusOr<std::optional<ControlCommand>> ParseControlLine(absl::string_view line) {
  line = line.substr(0, line.find('#'));
  const std::vector<absl::string_view> words =
      absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
  if (words.empty()) return std::nullopt;
  const absl::string_view verb = words[0];
  ControlCommand command;
  if (verb == "advance") {
    if (words.size() != 2) return absl::InvalidArgumentError("usage: advance <duration>");
    absl::StatusOr<int64_t> ms = ParseDurationMs(words[1]);
    if (!ms.ok()) return ms.status();
    command.advance_ms = *ms;
    return command;
  }
  static constexpr struct {
    absl::string_view verb;
    Action::Kind kind;
    absl::string_view usage;  // after "<verb> <gpu>"
    size_t min_words;
    size_t max_words;
  } kVerbs[] = {
      {"xid", Action::Kind::kXid, "<code> [<gpu-instance> <compute-instance>]", 3, 5},
      {"ecc-sbe", Action::Kind::kEccSingle, "", 2, 2},
      {"ecc-dbe", Action::Kind::kEccDouble, "", 2, 2},
      {"lost", Action::Kind::kLost, "", 2, 2},
      {"recover", Action::Kind::kRecover, "", 2, 2},
      {"set", Action::Kind::kSet, "<field> <value>", 4, 4},
      {"process", Action::Kind::kProcessStart,
       "<pid> <used-mib> [<gpu-instance> <compute-instance>]", 4, 6},
      {"process-exit", Action::Kind::kProcessExit, "<pid>", 3, 3},
      {"fail", Action::Kind::kFail, "<call|*> <error>", 4, 4},
      {"unfail", Action::Kind::kUnfail, "", 2, 2},
      {"reset", Action::Kind::kReset, "", 2, 2},
  };
  const auto* spec = std::find_if(std::begin(kVerbs), std::end(kVerbs),
                                  [&](const auto& candidate) { return candidate.verb == verb; });
  if (spec == std::end(kVerbs)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown command \"", verb,
                     "\" (xid, ecc-sbe, ecc-dbe, lost, recover, set, process, process-exit, "
                     "fail, unfail, reset, advance)"));
  }
  const bool paired = spec->max_words > spec->min_words;  // optional GI/CI pair
  if (words.size() < spec->min_words || words.size() > spec->max_words ||
      (paired && words.size() != spec->min_words && words.size() != spec->max_words)) {
    return absl::InvalidArgumentError(absl::StrCat("usage: ", verb, " <gpu> ", spec->usage));
  }
  Action action;
  action.kind = spec->kind;
  absl::StatusOr<int> gpu = ParseGpu(words[1]);
  if (!gpu.ok()) return gpu.status();
  action.gpu = *gpu;
  std::optional<unsigned int> gi;
  std::optional<unsigned int> ci;
  if (paired && words.size() == spec->max_words) {
    absl::StatusOr<unsigned int> gi_id = ParseUint(words[spec->min_words], "a GPU-instance id");
    if (!gi_id.ok()) return gi_id.status();
    absl::StatusOr<unsigned int> ci_id =
        ParseUint(words[spec->min_words + 1], "a compute-instance id");
    if (!ci_id.ok()) return ci_id.status();
    gi = *gi_id;
    ci = *ci_id;
  }
  switch (action.kind) {
    case Action::Kind::kXid: {
      absl::StatusOr<unsigned int> code = ParseUint(words[2], "an XID number");
      if (!code.ok()) return code.status();
      action.xid = *code;
      action.gpu_instance = gi;
      action.compute_instance = ci;
      break;
    }
    case Action::Kind::kSet: {
      const FieldInfo* info = FindField(words[2]);
      if (info == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("unknown field \"", words[2], "\"; known: ", FieldNames()));
      }
      if (!absl::SimpleAtod(words[3], &action.value) || action.value < info->min ||
          action.value > info->max) {
        return absl::InvalidArgumentError(absl::StrCat(info->name, ": expected a number between ",
                                                       info->min, " and ", info->max, ", got \"",
                                                       words[3], "\""));
      }
      action.field = info->field;
      break;
    }
    case Action::Kind::kProcessStart:
    case Action::Kind::kProcessExit: {
      absl::StatusOr<unsigned int> pid = ParseUint(words[2], "a pid");
      if (!pid.ok()) return pid.status();
      action.process.pid = *pid;
      if (action.kind == Action::Kind::kProcessStart) {
        absl::StatusOr<unsigned int> mib = ParseUint(words[3], "MiB in use");
        if (!mib.ok()) return mib.status();
        action.process.used_mib = *mib;
        action.process.gpu_instance = gi;
        action.process.compute_instance = ci;
      }
      break;
    }
    case Action::Kind::kFail: {
      if (words[2] != "*" && !absl::StartsWith(words[2], "nvml")) {
        return absl::InvalidArgumentError(absl::StrCat(
            "fail: expected an NVML function name (nvml...) or \"*\", got \"", words[2], "\""));
      }
      absl::StatusOr<nvmlReturn_t> error = ParseInjectedError(words[3]);
      if (!error.ok()) return error.status();
      action.call = std::string(words[2]);
      action.error = *error;
      break;
    }
    default:
      break;
  }
  command.action = action;
  return command;
}

std::vector<std::pair<int, std::string>> ControlFile::ReadNewLines() {
  std::vector<std::pair<int, std::string>> lines;
  struct stat info {};
  if (stat(path_.c_str(), &info) != 0) return lines;
  if (info.st_dev != device_ || info.st_ino != inode_ || info.st_size < offset_) {
    device_ = info.st_dev;
    inode_ = info.st_ino;
    offset_ = 0;
    line_ = 0;
  }
  if (info.st_size == offset_) return lines;
  const int fd = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return lines;
  std::string buffer(static_cast<size_t>(std::min(info.st_size - offset_, kMaxRead)), '\0');
  const ssize_t got = pread(fd, buffer.data(), buffer.size(), offset_);
  close(fd);
  if (got <= 0) return lines;
  buffer.resize(static_cast<size_t>(got));
  // Only whole lines: a writer may be halfway through the last one.
  const size_t end = buffer.rfind('\n');
  if (end == std::string::npos) return lines;
  for (absl::string_view line : absl::StrSplit(absl::string_view(buffer).substr(0, end), '\n')) {
    lines.emplace_back(++line_, std::string(line));
  }
  offset_ += static_cast<off_t>(end + 1);
  return lines;
}

}  // namespace gpuop::fakenvml
