#include "test/node/node_e2e_util.h"

#include <fstream>
#include <sstream>

#include <stdlib.h>
#include <sys/wait.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/files.h"
#include "common/process.h"

namespace gpuop::test {
namespace {

namespace fs = std::filesystem;

}  // namespace

absl::StatusOr<ToolResult> RunTool(std::vector<std::string> argv, std::vector<std::string> env,
                                   absl::Duration timeout) {
  std::string templ = "/tmp/gpuop-node-tool-XXXXXX";
  const int fd = mkstemp(templ.data());
  if (fd < 0) return absl::ErrnoToStatus(errno, "mkstemp");
  ::close(fd);
  const fs::path out = templ;
  const std::string program = argv.empty() ? "" : argv[0];
  absl::StatusOr<common::Subprocess> process = common::Subprocess::Spawn(
      {.argv = std::move(argv), .env = std::move(env), .output_path = out});
  if (!process.ok()) {
    fs::remove(out);
    return process.status();
  }
  absl::StatusOr<int> status = process->Wait(timeout);
  if (!status.ok()) {
    (void)process->Stop(absl::Seconds(5));
    std::string output = common::ReadFile(out).value_or("");
    fs::remove(out);
    return absl::DeadlineExceededError(absl::StrCat(program, " still running after ",
                                                    absl::FormatDuration(timeout), ":\n", output));
  }
  ToolResult result{.exit_code = WIFEXITED(*status) ? WEXITSTATUS(*status) : 128,
                    .output = common::ReadFile(out).value_or("")};
  fs::remove(out);
  return result;
}

absl::StatusOr<std::string> ContainerLog(const fs::path& pod_logs_dir, absl::string_view ns,
                                         absl::string_view pod, absl::string_view container) {
  const std::string prefix = absl::StrCat(ns, "_", pod, "_");
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(pod_logs_dir, ec)) {
    if (!absl::StartsWith(entry.path().filename().string(), prefix)) continue;
    const fs::path dir = entry.path() / std::string(container);
    // The newest restart's file.
    fs::path newest;
    int best = -1;
    for (const auto& log : fs::directory_iterator(dir, ec)) {
      const std::string name = log.path().filename().string();
      if (!absl::EndsWith(name, ".log")) continue;
      const int n = std::atoi(name.c_str());
      if (n > best) {
        best = n;
        newest = log.path();
      }
    }
    if (newest.empty()) break;
    // "<time> <stream> <P|F> <text>": P is a partial line continued by the next record.
    std::string text;
    for (absl::string_view line :
         absl::StrSplit(common::ReadFile(newest).value_or(""), '\n', absl::SkipEmpty())) {
      std::vector<absl::string_view> parts = absl::StrSplit(line, absl::MaxSplits(' ', 3));
      if (parts.size() < 4) continue;
      absl::StrAppend(&text, parts[3]);
      if (parts[2] == "F") text.push_back('\n');
    }
    return text;
  }
  return absl::NotFoundError(absl::StrCat("no log yet for ", ns, "/", pod, " container ", container,
                                          " under ", pod_logs_dir.string()));
}

std::map<std::string, std::string> SnapshotTree(const fs::path& dir) {
  std::map<std::string, std::string> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) {
      files[fs::relative(it->path(), dir, ec).string()] = common::ReadFile(it->path()).value_or("");
    }
  }
  return files;
}

std::string DescribeTreeDifference(const std::map<std::string, std::string>& before,
                                   const std::map<std::string, std::string>& after) {
  std::string out;
  for (const auto& [path, text] : before) {
    auto it = after.find(path);
    if (it == after.end()) {
      absl::StrAppend(&out, "removed: ", path, "\n");
    } else if (it->second != text) {
      absl::StrAppend(&out, "changed: ", path, " (", text.size(), " -> ", it->second.size(),
                      " bytes)\n");
    }
  }
  for (const auto& [path, text] : after) {
    if (!before.contains(path)) absl::StrAppend(&out, "added: ", path, "\n");
  }
  return out;
}

}  // namespace gpuop::test
