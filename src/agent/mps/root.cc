#include "agent/mps/root.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace gpuop::agent::mps {

std::filesystem::path Root::ResourceDir(absl::string_view resource) const {
  return dir_ / std::filesystem::path(std::string(resource)).relative_path();
}

std::filesystem::path Root::PipeDir(absl::string_view resource) const {
  return ResourceDir(resource) / "pipe";
}

std::filesystem::path Root::LogDir(absl::string_view resource) const {
  return ResourceDir(resource) / "log";
}

std::filesystem::path Root::StartedFile(absl::string_view resource) const {
  return ResourceDir(resource) / ".started";
}

std::string FormatReady(const ReadyResources& resources) {
  std::string out;
  for (const auto& [resource, gpus] : resources) {
    absl::StrAppend(&out, resource, " ", absl::StrJoin(gpus, ",", absl::PairFormatter("=")), "\n");
  }
  return out;
}

ReadyResources ParseReady(absl::string_view text) {
  ReadyResources out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (fields.size() != 2) continue;
    std::map<std::string, int> gpus;
    bool valid = true;
    for (absl::string_view gpu : absl::StrSplit(fields[1], ',')) {
      std::vector<absl::string_view> kv = absl::StrSplit(gpu, absl::MaxSplits('=', 1));
      int replicas = 0;
      if (kv.size() != 2 || kv[0].empty() || !absl::SimpleAtoi(kv[1], &replicas) || replicas < 1) {
        valid = false;
        break;
      }
      gpus[std::string(kv[0])] = replicas;
    }
    if (valid) out[std::string(fields[0])] = std::move(gpus);
  }
  return out;
}

}  // namespace gpuop::agent::mps
