#include "agent/runtime/crio.h"

#include <algorithm>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "agent/runtime/toml_util.h"
#include "common/status_macros.h"

namespace gpuop::agent::runtime {
namespace {

namespace fs = std::filesystem;

constexpr char kDropInHeader[] =
    "# Written by gpuop-agent (`gpuop-agent runtime configure`); removed by `gpuop-agent runtime\n"
    "# unconfigure`. Regenerated on every configure: change /etc/crio/crio.conf, not this "
    "file.\n\n";

// The merged [crio.runtime] table of the files CRI-O loads before gpuop's drop-in.
absl::StatusOr<toml::table> MergedRuntimeTable(const std::vector<ImportedFile>& loaded) {
  toml::table merged;
  for (const ImportedFile& file : loaded) {
    GPUOP_ASSIGN_OR_RETURN(const toml::table table, ParseToml(file.content, file.path));
    const toml::node* crio = table.get("crio");
    GPUOP_RETURN_IF_ERROR(ExpectType(crio, toml::node_type::table, file.path, "crio"));
    if (crio == nullptr) continue;
    const toml::node* runtime = crio->as_table()->get("runtime");
    GPUOP_RETURN_IF_ERROR(ExpectType(runtime, toml::node_type::table, file.path, "crio.runtime"));
    if (runtime == nullptr) continue;
    const toml::table& runtime_table = *runtime->as_table();
    GPUOP_RETURN_IF_ERROR(ExpectStringArray(runtime_table.get("cdi_spec_dirs"), file.path,
                                            "crio.runtime.cdi_spec_dirs"));
    GPUOP_RETURN_IF_ERROR(ExpectType(runtime_table.get("default_runtime"), toml::node_type::string,
                                     file.path, "crio.runtime.default_runtime"));
    const toml::node* runtimes = runtime_table.get("runtimes");
    GPUOP_RETURN_IF_ERROR(
        ExpectType(runtimes, toml::node_type::table, file.path, "crio.runtime.runtimes"));
    if (runtimes != nullptr) {
      for (const auto& [name, entry] : *runtimes->as_table()) {
        GPUOP_RETURN_IF_ERROR(ExpectType(&entry, toml::node_type::table, file.path,
                                         KeyPath({"crio", "runtime", "runtimes", name.str()})));
      }
    }
    DeepMerge(merged, runtime_table);
  }
  return merged;
}

// The entry of a handler that runs `binary` as an OCI runtime: a copy of the default runtime's
// entry (or crun's, or runc's; never one of gpuop's handlers), so that its settings (monitor,
// runtime root, cgroup handling) hold for the handler's containers too, with runtime_path =
// `binary` and runtime_type = "oci".
toml::table HandlerEntry(const toml::table& merged, const Options& options,
                         const std::string& binary) {
  // CRI-O's own default is crun (runc before 1.31); take whichever entry the node defines.
  std::vector<std::string> candidates = {"crun", "runc"};
  if (const std::optional<std::string> name = merged["default_runtime"].value<std::string>()) {
    candidates.insert(candidates.begin(), *name);
  }
  toml::table entry;
  for (const std::string& name : candidates) {
    if (name == options.runtime_name || name == options.gpuop_runtime_name) continue;
    if (const toml::table* base = merged["runtimes"][name].as_table()) {
      entry = *base;
      break;
    }
  }
  entry.insert_or_assign("runtime_path", binary);
  entry.insert_or_assign("runtime_type", "oci");
  return entry;
}

}  // namespace

absl::StatusOr<std::string> RenderCrioDropIn(const std::vector<ImportedFile>& loaded,
                                             const Options& options,
                                             std::vector<std::string>* notes) {
  GPUOP_ASSIGN_OR_RETURN(const toml::table merged, MergedRuntimeTable(loaded));
  toml::table runtime;
  if (options.enable_cdi) {
    runtime.insert("cdi_spec_dirs", StringArray(options.cdi_spec_dirs));
  }
  toml::table runtimes;
  if (options.add_nvidia_runtime && merged["runtimes"][options.runtime_name]) {
    if (notes != nullptr) {
      notes->push_back(absl::StrCat("kept the node's own runtime handler crio.runtime.runtimes.",
                                    options.runtime_name, "; gpuop never replaces one"));
    }
  } else if (options.add_nvidia_runtime) {
    if (options.runtime_binary.empty()) {
      return absl::InvalidArgumentError("runtime options: runtime_binary is empty");
    }
    runtimes.insert(options.runtime_name, HandlerEntry(merged, options, options.runtime_binary));
  }
  if (options.add_gpuop_runtime) {
    toml::table entry = HandlerEntry(merged, options, options.gpuop_runtime_binary);
    // gpuop's own name: an entry there that differs is brought to what gpuop wants.
    const toml::table* existing = merged["runtimes"][options.gpuop_runtime_name].as_table();
    if (existing != nullptr && *existing != entry && notes != nullptr) {
      notes->push_back(absl::StrCat("set the runtime handler crio.runtime.runtimes.",
                                    options.gpuop_runtime_name,
                                    " to gpuop's (it differed; the name is gpuop's)"));
    }
    runtimes.insert(options.gpuop_runtime_name, std::move(entry));
  }
  if (!runtimes.empty()) runtime.insert("runtimes", std::move(runtimes));
  if (options.add_nvidia_runtime && options.set_as_default) {
    runtime.insert("default_runtime", options.runtime_name);
  }
  toml::table crio;
  crio.insert("runtime", std::move(runtime));
  toml::table drop_in;
  drop_in.insert("crio", std::move(crio));
  return absl::StrCat(kDropInHeader, FormatToml(drop_in));
}

Plan CrioPlan(const HostFiles& files, const Options& options, std::vector<std::string>* notes) {
  ManagedFile drop_in{
      .path = kCrioDropInPath,
      .kind = ManagedFile::Kind::kDropIn,
      .desired = [&files, options,
                  notes](const std::optional<std::string>&) -> absl::StatusOr<std::string> {
        std::vector<ImportedFile> loaded;
        GPUOP_ASSIGN_OR_RETURN(std::optional<std::string> main, files.Read(kCrioConfigPath));
        if (main.has_value()) loaded.push_back({kCrioConfigPath, *std::move(main)});
        std::vector<fs::path> drop_ins;
        std::error_code ec;
        fs::directory_iterator it(files.Resolve(kCrioDropInDir), ec);
        for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
          const fs::path path = fs::path(kCrioDropInDir) / it->path().filename();
          std::error_code type_ec;
          if (path != kCrioDropInPath && it->is_regular_file(type_ec)) drop_ins.push_back(path);
        }
        if (ec && ec != std::errc::no_such_file_or_directory) {
          return absl::InternalError(absl::StrCat("list ", kCrioDropInDir, ": ", ec.message()));
        }
        std::sort(drop_ins.begin(), drop_ins.end());
        for (const fs::path& path : drop_ins) {
          GPUOP_ASSIGN_OR_RETURN(std::optional<std::string> content, files.Read(path));
          if (content.has_value()) loaded.push_back({path, *std::move(content)});
        }
        return RenderCrioDropIn(loaded, options, notes);
      },
      .verb = "wrote",
      .mode_from = fs::path(kCrioConfigPath),
  };
  return {std::move(drop_in)};
}

}  // namespace gpuop::agent::runtime
