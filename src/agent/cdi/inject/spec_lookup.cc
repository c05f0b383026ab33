#include "agent/cdi/inject/spec_lookup.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include <dirent.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include "agent/cdi/inject/files.h"

namespace gpuop::agent::cdi::inject {
namespace {

using nlohmann::json;

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// The entries of `dir` that may be specs, sorted by name; nullopt when `dir` does not exist.
StatusOr<std::optional<std::vector<std::string>>> ListSpecFiles(const std::string& dir) {
  DIR* stream = ::opendir(dir.c_str());
  if (stream == nullptr) {
    if (errno == ENOENT || errno == ENOTDIR) return std::optional<std::vector<std::string>>();
    return Status::Error("read the CDI spec directory " + dir + ": " + std::strerror(errno), errno);
  }
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(stream)) {
    const std::string_view name = entry->d_name;
    if (EndsWith(name, ".json") || EndsWith(name, ".yaml")) names.emplace_back(name);
  }
  ::closedir(stream);
  std::sort(names.begin(), names.end());
  return std::optional<std::vector<std::string>>(std::move(names));
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

// The top-level kind of a YAML spec, found without a YAML parser: a "kind:" line at column 0
// (block style, as every CDI tool writes) or, as YAML is a superset of JSON, a JSON document's
// "kind". nullopt when neither gives it.
std::optional<std::string> YamlKind(std::string_view text) {
  const json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_object()) {
    const auto kind = doc.find("kind");
    if (kind != doc.end() && kind->is_string()) return kind->get<std::string>();
  }
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (!line.starts_with("kind:")) continue;
    line = Trim(line.substr(5));
    if (const size_t comment = line.find(" #"); comment != std::string_view::npos) {
      line = Trim(line.substr(0, comment));
    }
    if (line.size() >= 2 && (line.front() == '"' || line.front() == '\'') &&
        line.back() == line.front()) {
      line = line.substr(1, line.size() - 2);
    }
    return std::string(line);
  }
  return std::nullopt;
}

// A spec that defines some requested device, with its directory's position in the list.
struct Candidate {
  size_t priority;
  std::shared_ptr<const Spec> spec;
};

class Lookup {
 public:
  explicit Lookup(const std::vector<QualifiedName>& requests) {
    for (const QualifiedName& request : requests) kinds_.insert(request.kind());
  }

  // Reads one file; an error only when the file must not be skipped.
  Status Read(const std::string& path, size_t priority) {
    StatusOr<std::string> text = ReadFileLimited(path);
    if (!text.ok()) {
      // A directory or a dangling link named like a spec is not one.
      if (text.status().error_number() == ENOENT) return Status::Ok();
      struct stat info {};
      if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) return Status::Ok();
      problems_.push_back(text.status().message());
      return Status::Ok();
    }
    if (EndsWith(path, ".yaml")) {
      const std::optional<std::string> kind = YamlKind(*text);
      if (!kind) {
        problems_.push_back(path + ": no top-level kind found");
      } else if (kinds_.contains(*kind)) {
        return Status::Error(path + ": a CDI spec of kind " + *kind +
                             " in YAML, which gpuop-container-runtime does not read; write it "
                             "as JSON (.json)");
      }
      return Status::Ok();
    }
    const json doc = json::parse(text->begin(), text->end(), nullptr, /*allow_exceptions=*/false);
    if (!doc.is_object()) {
      problems_.push_back(path + (doc.is_discarded() ? ": not valid JSON" : ": not a JSON object"));
      return Status::Ok();
    }
    const auto kind = doc.find("kind");
    if (kind == doc.end() || !kind->is_string()) {
      problems_.push_back(path + ": kind: missing or not a string");
      return Status::Ok();
    }
    if (!kinds_.contains(kind->get<std::string>())) return Status::Ok();
    StatusOr<Spec> spec = ParseSpecJson(*text, path);
    if (!spec.ok()) return spec.status();
    auto shared = std::make_shared<const Spec>(std::move(*spec));
    for (const Device& device : shared->devices) {
      candidates_[shared->kind + "=" + device.name].push_back({priority, shared});
    }
    return Status::Ok();
  }

  StatusOr<ResolvedDevice> Resolve(const QualifiedName& request,
                                   const std::vector<std::string>& dirs) const {
    const std::string full = request.full();
    const auto found = candidates_.find(full);
    if (found == candidates_.end()) {
      std::string message = "CDI device " + full + " is not defined by any JSON spec in ";
      for (size_t i = 0; i < dirs.size(); ++i) message += (i > 0 ? ", " : "") + dirs[i];
      if (dirs.empty()) message += "(no directories)";
      if (!problems_.empty()) {
        message += "; specs that could not be read:";
        for (const std::string& problem : problems_) message += " " + problem + ";";
        message.pop_back();
      }
      return Status::Error(message);
    }
    const std::vector<Candidate>& candidates = found->second;
    size_t best = 0;
    for (size_t i = 1; i < candidates.size(); ++i) {
      if (candidates[i].priority >= candidates[best].priority) best = i;
    }
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (i != best && candidates[i].priority == candidates[best].priority) {
        return Status::Error("CDI device " + full + " is defined by both " +
                             candidates[i].spec->file + " and " + candidates[best].spec->file);
      }
    }
    const std::shared_ptr<const Spec>& spec = candidates[best].spec;
    return ResolvedDevice{.name = request, .spec = spec, .device = spec->FindDevice(request.name)};
  }

 private:
  std::set<std::string> kinds_;
  std::map<std::string, std::vector<Candidate>> candidates_;
  std::vector<std::string> problems_;  // files that could not be read or attributed to a kind
};

}  // namespace

std::vector<std::string> DefaultSpecDirs() { return {"/etc/cdi", "/var/run/cdi"}; }

StatusOr<std::vector<ResolvedDevice>> ResolveDevices(const std::vector<std::string>& dirs,
                                                     const std::vector<QualifiedName>& requests) {
  if (requests.empty()) return std::vector<ResolvedDevice>();
  Lookup lookup(requests);
  for (size_t priority = 0; priority < dirs.size(); ++priority) {
    const std::string& dir = dirs[priority];
    StatusOr<std::optional<std::vector<std::string>>> names = ListSpecFiles(dir);
    if (!names.ok()) return names.status();
    if (!names->has_value()) continue;
    for (const std::string& name : **names) {
      const std::string path = (dir.ends_with('/') ? dir : dir + "/") + name;
      if (Status s = lookup.Read(path, priority); !s.ok()) return s;
    }
  }
  std::vector<ResolvedDevice> out;
  for (const QualifiedName& request : requests) {
    StatusOr<ResolvedDevice> device = lookup.Resolve(request, dirs);
    if (!device.ok()) return device.status();
    out.push_back(std::move(*device));
  }
  return out;
}

}  // namespace gpuop::agent::cdi::inject
