#include "agent/runtime/docker.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace gpuop::agent::runtime {
namespace {

using Json = nlohmann::ordered_json;

const std::vector<std::string>& DockerDefaultCdiDirs() {
  static const std::vector<std::string>* dirs =
      new std::vector<std::string>{"/etc/cdi", "/var/run/cdi"};
  return *dirs;
}

// "<file>:<line>" for the first `"key":` in `text`, or "<file>" when not found. JSON values carry
// no positions after parsing, so the key's first occurrence stands in for it.
std::string WhereKey(absl::string_view text, absl::string_view key) {
  const std::string quoted = absl::StrCat("\"", key, "\"");
  for (size_t pos = text.find(quoted); pos != absl::string_view::npos;
       pos = text.find(quoted, pos + 1)) {
    size_t after = pos + quoted.size();
    while (after < text.size() && absl::ascii_isspace(text[after])) ++after;
    if (after < text.size() && text[after] == ':') {
      const size_t line = 1 + std::count(text.begin(), text.begin() + pos, '\n');
      return absl::StrCat(kDockerConfigPath, ":", line);
    }
  }
  return kDockerConfigPath;
}

// "an object", "a string", ...
std::string TypeName(const Json& value) {
  const std::string name = value.type_name();
  return absl::StrCat(name == "object" || name == "array" ? "an " : "a ", name);
}

absl::Status WrongType(absl::string_view text, absl::string_view key, absl::string_view path,
                       const Json& value, absl::string_view expected) {
  return absl::FailedPreconditionError(absl::StrCat(WhereKey(text, key), ": ", path, " is ",
                                                    TypeName(value), ", expected ", expected,
                                                    "; gpuop leaves the file as it is"));
}

absl::StatusOr<Json> Parse(absl::string_view text) {
  if (std::all_of(text.begin(), text.end(), [](char c) { return absl::ascii_isspace(c); })) {
    return Json::object();
  }
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    const size_t offset = std::min(e.byte > 0 ? e.byte - 1 : 0, text.size());
    const size_t line = 1 + std::count(text.begin(), text.begin() + offset, '\n');
    const size_t line_start = text.rfind('\n', offset == 0 ? 0 : offset - 1);
    const size_t column =
        line_start == absl::string_view::npos || offset == 0 ? offset + 1 : offset - line_start;
    absl::string_view what = e.what();
    if (const size_t colon = what.find(": "); colon != absl::string_view::npos) {
      what.remove_prefix(colon + 2);
    }
    return absl::FailedPreconditionError(absl::StrCat(kDockerConfigPath, ":", line, ":", column,
                                                      ": invalid JSON: ", what,
                                                      "; gpuop leaves the file as it is"));
  }
}

// The file's indentation: the whitespace before its first indented key; 4 spaces by default.
std::pair<int, char> Indentation(absl::string_view text) {
  for (size_t pos = text.find('\n'); pos != absl::string_view::npos;
       pos = text.find('\n', pos + 1)) {
    size_t end = pos + 1;
    while (end < text.size() && (text[end] == ' ' || text[end] == '\t')) ++end;
    if (end > pos + 1 && end < text.size() && text[end] == '"') {
      return {static_cast<int>(end - pos - 1), text[pos + 1]};
    }
  }
  return {4, ' '};
}

// Checks the keys gpuop touches; OK when each is absent or of the expected type.
absl::Status CheckTypes(const Json& doc, absl::string_view text, const Options& options) {
  if (const auto it = doc.find("features"); it != doc.end()) {
    if (!it->is_object()) return WrongType(text, "features", "features", *it, "an object");
    if (const auto cdi = it->find("cdi"); cdi != it->end() && !cdi->is_boolean()) {
      return WrongType(text, "cdi", "features.cdi", *cdi, "a boolean");
    }
  }
  if (const auto it = doc.find("cdi-spec-dirs"); it != doc.end()) {
    const bool ok = it->is_array() && std::all_of(it->begin(), it->end(),
                                                  [](const Json& v) { return v.is_string(); });
    if (!ok) return WrongType(text, "cdi-spec-dirs", "cdi-spec-dirs", *it, "an array of strings");
  }
  if (const auto it = doc.find("runtimes"); it != doc.end()) {
    if (!it->is_object()) return WrongType(text, "runtimes", "runtimes", *it, "an object");
    if (const auto entry = it->find(options.runtime_name); entry != it->end()) {
      const std::string path = absl::StrCat("runtimes.", options.runtime_name);
      if (!entry->is_object()) {
        return WrongType(text, options.runtime_name, path, *entry, "an object");
      }
      if (const auto p = entry->find("path"); p != entry->end() && !p->is_string()) {
        return WrongType(text, "path", absl::StrCat(path, ".path"), *p, "a string");
      }
    }
  }
  if (const auto it = doc.find("default-runtime"); it != doc.end() && !it->is_string()) {
    return WrongType(text, "default-runtime", "default-runtime", *it, "a string");
  }
  return absl::OkStatus();
}

// Sets what `options` asks for; returns whether anything changed.
bool Apply(Json& doc, const Options& options, std::vector<std::string>* notes) {
  bool changed = false;
  auto set = [&changed](Json& target, const Json& value) {
    if (target != value) {
      target = value;
      changed = true;
    }
  };
  if (options.enable_cdi) {
    set(doc["features"]["cdi"], true);
    if (options.cdi_spec_dirs != DockerDefaultCdiDirs()) {
      set(doc["cdi-spec-dirs"], options.cdi_spec_dirs);
    }
  }
  const bool exists = doc.contains("runtimes") && doc["runtimes"].contains(options.runtime_name);
  if (options.add_nvidia_runtime && exists) {
    // gpuop's own entry from an earlier configure has its path; another is the node's.
    const Json& entry = doc["runtimes"][options.runtime_name];
    if (notes != nullptr && entry.value("path", "") != options.runtime_binary) {
      notes->push_back(absl::StrCat("kept the node's own runtime handler runtimes.",
                                    options.runtime_name, "; gpuop never replaces one"));
    }
  } else if (options.add_nvidia_runtime) {
    Json& entry = doc["runtimes"][options.runtime_name];
    set(entry["path"], options.runtime_binary);
    if (!entry.contains("args")) set(entry["args"], Json::array());
  }
  if (options.add_gpuop_runtime) {
    // gpuop's own name: an entry there that differs is brought to what gpuop wants.
    const Json want = {{"path", options.gpuop_runtime_binary}};
    Json& runtimes = doc["runtimes"];
    if (notes != nullptr && runtimes.contains(options.gpuop_runtime_name) &&
        runtimes[options.gpuop_runtime_name] != want) {
      notes->push_back(absl::StrCat("set the runtime handler runtimes.", options.gpuop_runtime_name,
                                    " to gpuop's (it differed; the name is gpuop's)"));
    }
    set(runtimes[options.gpuop_runtime_name], want);
  }
  if (options.set_as_default) set(doc["default-runtime"], options.runtime_name);
  return changed;
}

}  // namespace

absl::StatusOr<std::string> EditDaemonJson(const std::optional<std::string>& current,
                                           const Options& options,
                                           std::vector<std::string>* notes) {
  const absl::string_view text = current.has_value() ? absl::string_view(*current) : "";
  GPUOP_ASSIGN_OR_RETURN(Json doc, Parse(text));
  if (!doc.is_object()) {
    return absl::FailedPreconditionError(absl::StrCat(kDockerConfigPath, ": the top level is ",
                                                      TypeName(doc),
                                                      ", expected an object; gpuop leaves the "
                                                      "file as it is"));
  }
  GPUOP_RETURN_IF_ERROR(CheckTypes(doc, text, options));
  if (options.add_nvidia_runtime && options.runtime_binary.empty()) {
    return absl::InvalidArgumentError("runtime options: runtime_binary is empty");
  }
  if (!Apply(doc, options, notes) && current.has_value()) return *current;
  const auto [width, fill] = Indentation(text);
  try {
    return doc.dump(width, fill, false, Json::error_handler_t::strict) + "\n";
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(kDockerConfigPath, ": cannot write the options as JSON: ", e.what()));
  }
}

Plan DockerPlan(const HostFiles& /*files*/, const Options& options,
                std::vector<std::string>* notes) {
  ManagedFile daemon_json{
      .path = kDockerConfigPath,
      .kind = ManagedFile::Kind::kEdited,
      .desired =
          [options, notes](const std::optional<std::string>& current) {
            return EditDaemonJson(current, options, notes);
          },
      .verb = "updated",
  };
  return {std::move(daemon_json)};
}

}  // namespace gpuop::agent::runtime
