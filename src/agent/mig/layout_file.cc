#include "agent/mig/layout_file.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/files.h"

namespace gpuop::agent::mig {

LayoutNotice ReadLayoutFile(const std::filesystem::path& path) {
  LayoutNotice notice;
  absl::StatusOr<std::optional<std::string>> text = common::ReadFileIfExists(path);
  if (!text.ok() || !text->has_value()) return notice;
  for (absl::string_view line : absl::StrSplit(**text, '\n', absl::SkipWhitespace())) {
    absl::string_view value = line;
    if (absl::ConsumePrefix(&value, "generation:")) {
      int64_t generation = 0;
      if (absl::SimpleAtoi(absl::StripAsciiWhitespace(value), &generation) && generation > 0) {
        notice.generation = generation;
      }
    } else if (absl::ConsumePrefix(&value, "layout:")) {
      notice.layout = std::string(absl::StripAsciiWhitespace(value));
    }
  }
  return notice;
}

absl::StatusOr<LayoutNotice> WriteLayoutFile(const std::filesystem::path& path,
                                             const std::string& layout) {
  const LayoutNotice notice{.generation = ReadLayoutFile(path).generation + 1, .layout = layout};
  const absl::Status written = common::WriteFileAtomically(
      path, absl::StrCat("generation: ", notice.generation, "\nlayout: ", layout, "\n"));
  if (!written.ok()) {
    return absl::Status(written.code(), absl::StrCat("write MIG layout file ", path.string(), ": ",
                                                     written.message()));
  }
  return notice;
}

}  // namespace gpuop::agent::mig
