#include "agent/runtime/containerd.h"

#include <algorithm>
#include <iterator>
#include <optional>

#include "absl/strings/str_cat.h"
#include "agent/runtime/toml_util.h"
#include "common/status_macros.h"

namespace gpuop::agent::runtime {
namespace {

namespace fs = std::filesystem;

constexpr char kRuncType[] = "io.containerd.runc.v2";

constexpr char kDropInHeader[] =
    "# Written by gpuop-agent (`gpuop-agent runtime configure`); removed by `gpuop-agent runtime\n"
    "# unconfigure`. Regenerated from /etc/containerd/config.toml and the files it imports: edit\n"
    "# those, not this file. It holds the whole CRI plugin table because containerd 1.x\n"
    "# replaces a plugin's table per file instead of merging it.\n\n";

constexpr char kIgnoredV1Header[] =
    "# Written by gpuop-agent (`gpuop-agent runtime configure`); removed by `gpuop-agent runtime\n"
    "# unconfigure`. /etc/containerd/config.toml has no `version`, and containerd 2.x reads such\n"
    "# a file as version 1 and ignores its CRI plugin settings: this file holds gpuop's changes\n"
    "# to containerd's built-in CRI settings, which containerd 2.x merges key by key.\n\n";

constexpr char kNewMainConfig[] =
    "# Created by gpuop-agent (`gpuop-agent runtime configure`) on a node without a containerd\n"
    "# configuration, where containerd ran with its built-in defaults; this file keeps them and\n"
    "# only imports gpuop's drop-in. Version 2 is read by containerd 1.7 and 2.x alike.\n"
    "# `gpuop-agent runtime unconfigure` removes it again.\n"
    "version = 2\n";

constexpr char kMinimalDropInHeader[] =
    "# Written by gpuop-agent (`gpuop-agent runtime configure`); removed by `gpuop-agent runtime\n"
    "# unconfigure`. Only gpuop's changes to /etc/containerd/config.toml and the files it "
    "imports:\n"
    "# containerd 2.x merges it into them key by key, so edit those, not this file.\n\n";

absl::Status Unsupported(const fs::path& file, absl::string_view what) {
  return absl::FailedPreconditionError(absl::StrCat(
      file.string(), ": ", what,
      "; gpuop configures containerd configurations of version 1 to 4 only and leaves this file "
      "as it is"));
}

absl::StatusOr<ContainerdConfig> Inspect(const toml::table& table, const fs::path& file) {
  ContainerdConfig config;
  const toml::node* version = table.get("version");
  GPUOP_RETURN_IF_ERROR(ExpectType(version, toml::node_type::integer, file, "version"));
  if (version != nullptr) {
    config.version_written = true;
    config.version = version->as_integer()->get();
  }
  // containerd treats a missing version and version 0 as version 1 (1.x reads it as such, 2.x
  // migrates it to the current version on every start).
  if (config.version == 0) config.version = 1;
  if (config.version == 1) {
    config.cri_plugin = "cri";
  } else if (config.version == 2) {
    config.cri_plugin = "io.containerd.grpc.v1.cri";
  } else if (config.version == 3 || config.version == 4) {
    config.cri_plugin = "io.containerd.cri.v1.runtime";
  } else {
    return Unsupported(Where(file, *version),
                       absl::StrCat("version ", config.version, " is not a known config version"));
  }

  const toml::node* imports = table.get("imports");
  GPUOP_RETURN_IF_ERROR(ExpectStringArray(imports, file, "imports"));
  if (imports != nullptr) {
    for (const toml::node& entry : *imports->as_array()) {
      config.imports.push_back(entry.as_string()->get());
    }
  }
  const toml::node* disabled = table.get("disabled_plugins");
  GPUOP_RETURN_IF_ERROR(ExpectStringArray(disabled, file, "disabled_plugins"));
  if (disabled != nullptr) {
    for (const toml::node& entry : *disabled->as_array()) {
      const std::string& name = entry.as_string()->get();
      if (name == config.cri_plugin || name == "cri" || name == "io.containerd.grpc.v1.cri") {
        return absl::FailedPreconditionError(
            absl::StrCat(Where(file, entry), ": disabled_plugins turns off the CRI plugin (\"",
                         name, "\"), so no kubelet uses this containerd; gpuop leaves it alone"));
      }
    }
  }
  const toml::node* plugins = table.get("plugins");
  GPUOP_RETURN_IF_ERROR(ExpectType(plugins, toml::node_type::table, file, "plugins"));
  if (plugins != nullptr) {
    GPUOP_RETURN_IF_ERROR(ExpectType(plugins->as_table()->get(config.cri_plugin),
                                     toml::node_type::table, file,
                                     KeyPath({"plugins", config.cri_plugin})));
    // containerd 1.x looks a version 1 file's plugins up by their short ID only.
    constexpr char kVersion2Cri[] = "io.containerd.grpc.v1.cri";
    if (const toml::node* cri = plugins->as_table()->get(kVersion2Cri);
        config.version == 1 && cri != nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          Where(file, *cri), ": ", KeyPath({"plugins", kVersion2Cri}),
          " in a version 1 configuration, where containerd 1.x reads the CRI plugin's settings "
          "from plugins.cri only; add `version = 2` at the top or rename the table to "
          "plugins.cri"));
    }
  }
  return config;
}

// Checks the types at the keys gpuop reads or changes in one file's CRI plugin table `cri`
// (`cri_path`), while the nodes still carry their line numbers (copies lose them).
absl::Status CheckCriTypes(const toml::table& cri, const fs::path& file,
                           const std::string& cri_path) {
  GPUOP_RETURN_IF_ERROR(ExpectType(cri.get("enable_cdi"), toml::node_type::boolean, file,
                                   absl::StrCat(cri_path, ".enable_cdi")));
  GPUOP_RETURN_IF_ERROR(
      ExpectStringArray(cri.get("cdi_spec_dirs"), file, absl::StrCat(cri_path, ".cdi_spec_dirs")));
  const std::string containerd_path = absl::StrCat(cri_path, ".containerd");
  const toml::node* containerd = cri.get("containerd");
  GPUOP_RETURN_IF_ERROR(ExpectType(containerd, toml::node_type::table, file, containerd_path));
  if (containerd == nullptr) return absl::OkStatus();
  const toml::table& containerd_table = *containerd->as_table();
  GPUOP_RETURN_IF_ERROR(ExpectType(containerd_table.get("default_runtime_name"),
                                   toml::node_type::string, file,
                                   absl::StrCat(containerd_path, ".default_runtime_name")));
  const std::string runtimes_path = absl::StrCat(containerd_path, ".runtimes");
  const toml::node* runtimes = containerd_table.get("runtimes");
  GPUOP_RETURN_IF_ERROR(ExpectType(runtimes, toml::node_type::table, file, runtimes_path));
  if (runtimes == nullptr) return absl::OkStatus();
  for (const auto& [name, entry] : *runtimes->as_table()) {
    const std::string path = absl::StrCat(runtimes_path, ".", KeyPath({name.str()}));
    GPUOP_RETURN_IF_ERROR(ExpectType(&entry, toml::node_type::table, file, path));
    GPUOP_RETURN_IF_ERROR(ExpectType(entry.as_table()->get("runtime_type"), toml::node_type::string,
                                     file, absl::StrCat(path, ".runtime_type")));
    GPUOP_RETURN_IF_ERROR(ExpectType(entry.as_table()->get("options"), toml::node_type::table, file,
                                     absl::StrCat(path, ".options")));
  }
  return absl::OkStatus();
}

// The table at `key` under `parent`, created empty when absent. FailedPrecondition when the key
// holds something else.
absl::StatusOr<toml::table*> SubTable(toml::table& parent, std::string_view key,
                                      const fs::path& file, const std::string& path) {
  toml::node* node = parent.get(key);
  GPUOP_RETURN_IF_ERROR(ExpectType(node, toml::node_type::table, file, path));
  if (node == nullptr) node = &parent.insert_or_assign(key, toml::table{}).first->second;
  return node->as_table();
}

// The runtime table a handler gpuop defines starts from: the default runtime when it is
// runc-based, else "runc"; nullptr when neither is there. Never one of gpuop's handlers (the
// nvidia one, gpuop's own), which would copy gpuop's own settings into each other.
absl::StatusOr<const toml::table*> BaseRuntime(const toml::table& runtimes,
                                               const std::string& default_name,
                                               const Options& options, const fs::path& file,
                                               const std::string& runtimes_path) {
  for (const std::string& name : {default_name, std::string("runc")}) {
    if (name == options.runtime_name || name == options.gpuop_runtime_name) continue;
    const toml::node* node = runtimes.get(name);
    const std::string path = absl::StrCat(runtimes_path, ".", KeyPath({name}));
    GPUOP_RETURN_IF_ERROR(ExpectType(node, toml::node_type::table, file, path));
    if (node == nullptr) continue;
    const toml::table& runtime = *node->as_table();
    GPUOP_RETURN_IF_ERROR(ExpectType(runtime.get("runtime_type"), toml::node_type::string, file,
                                     absl::StrCat(path, ".runtime_type")));
    GPUOP_RETURN_IF_ERROR(ExpectType(runtime.get("options"), toml::node_type::table, file,
                                     absl::StrCat(path, ".options")));
    const std::optional<std::string> type = runtime["runtime_type"].value<std::string>();
    if (!type.has_value() || *type == kRuncType) return &runtime;
  }
  return nullptr;
}

// The CRI plugin's runtimes table, where the handlers go, created when absent.
struct RuntimesTable {
  toml::table* containerd = nullptr;  // the CRI plugin's `containerd` table
  toml::table* runtimes = nullptr;    // its `runtimes`
  std::string default_name;           // its default_runtime_name, "runc" when unset
  std::string containerd_path;        // key paths, for errors and notes
  std::string runtimes_path;
};

absl::StatusOr<RuntimesTable> FindRuntimes(toml::table& cri, const std::string& cri_path,
                                           const fs::path& file) {
  RuntimesTable out;
  out.containerd_path = absl::StrCat(cri_path, ".containerd");
  GPUOP_ASSIGN_OR_RETURN(out.containerd, SubTable(cri, "containerd", file, out.containerd_path));
  GPUOP_RETURN_IF_ERROR(ExpectType(out.containerd->get("default_runtime_name"),
                                   toml::node_type::string, file,
                                   absl::StrCat(out.containerd_path, ".default_runtime_name")));
  out.default_name = (*out.containerd)["default_runtime_name"].value_or(std::string("runc"));
  out.runtimes_path = absl::StrCat(out.containerd_path, ".runtimes");
  GPUOP_ASSIGN_OR_RETURN(out.runtimes,
                         SubTable(*out.containerd, "runtimes", file, out.runtimes_path));
  return out;
}

// The entry of a handler that runs runc through `binary`: a copy of the base runtime
// (BaseRuntime), so that its settings (SystemdCgroup, a runc Root, a sandboxer) hold for the
// handler's containers too, with runtime_type = io.containerd.runc.v2 and options.BinaryName =
// `binary`. `entry_path` names the entry in errors.
absl::StatusOr<toml::table> RuncHandlerEntry(const RuntimesTable& table, const std::string& binary,
                                             const Options& options, const fs::path& file,
                                             const std::string& entry_path) {
  GPUOP_ASSIGN_OR_RETURN(const toml::table* base, BaseRuntime(*table.runtimes, table.default_name,
                                                              options, file, table.runtimes_path));
  toml::table entry = base != nullptr ? *base : toml::table{};
  entry.insert_or_assign("runtime_type", kRuncType);
  GPUOP_ASSIGN_OR_RETURN(toml::table * runtime_options,
                         SubTable(entry, "options", file, absl::StrCat(entry_path, ".options")));
  runtime_options->insert_or_assign("BinaryName", binary);
  return entry;
}

// containerd's built-in runc entry, written out when runc is the default and no file defines it:
// containerd 1.x decodes a file's runtimes over the built-in ones, and a runtimes table that
// gains a handler but lacks runc could lose it there.
void WriteOutBuiltInRunc(RuntimesTable& table) {
  if (table.default_name != "runc" || table.runtimes->get("runc") != nullptr) return;
  toml::table runc;
  runc.insert("runtime_type", kRuncType);
  table.runtimes->insert("runc", std::move(runc));
}

// The node's CDI spec directories (containerd's default when the files set none) in their order,
// then those of `options` the node lacks: a merge, so a directory a user added keeps working.
// `cri`'s cdi_spec_dirs must have been checked to be an array of strings.
toml::array MergedCdiSpecDirs(const toml::table& cri, const Options& options) {
  std::vector<std::string> dirs;
  if (const toml::array* existing = cri["cdi_spec_dirs"].as_array()) {
    for (const toml::node& dir : *existing) dirs.push_back(dir.as_string()->get());
  } else {
    dirs.assign(std::begin(kContainerdDefaultCdiSpecDirs), std::end(kContainerdDefaultCdiSpecDirs));
  }
  for (const std::string& dir : options.cdi_spec_dirs) {
    if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
  }
  return StringArray(dirs);
}

// Applies `options` to the CRI plugin table `cri` (whose key path is `cri_path`).
// `explicit_runc`: write containerd's built-in runc entry out when a handler is added and no
// file defines runc (the whole-table drop-ins of versions 1 and 2).
absl::Status ApplyOptions(toml::table& cri, const std::string& cri_path, const Options& options,
                          bool explicit_runc, const fs::path& file,
                          std::vector<std::string>* notes) {
  if (options.enable_cdi) {
    GPUOP_RETURN_IF_ERROR(ExpectType(cri.get("enable_cdi"), toml::node_type::boolean, file,
                                     absl::StrCat(cri_path, ".enable_cdi")));
    GPUOP_RETURN_IF_ERROR(ExpectStringArray(cri.get("cdi_spec_dirs"), file,
                                            absl::StrCat(cri_path, ".cdi_spec_dirs")));
    cri.insert_or_assign("enable_cdi", true);
    cri.insert_or_assign("cdi_spec_dirs", MergedCdiSpecDirs(cri, options));
  }
  if (!options.add_nvidia_runtime && !options.add_gpuop_runtime) return absl::OkStatus();

  GPUOP_ASSIGN_OR_RETURN(RuntimesTable table, FindRuntimes(cri, cri_path, file));
  // Both entries start from the node's runtimes as they are, before either handler is written.
  std::vector<std::pair<std::string, toml::table>> entries;
  if (options.add_nvidia_runtime) {
    const std::string entry_path =
        absl::StrCat(table.runtimes_path, ".", KeyPath({options.runtime_name}));
    const toml::node* existing = table.runtimes->get(options.runtime_name);
    GPUOP_RETURN_IF_ERROR(ExpectType(existing, toml::node_type::table, file, entry_path));
    if (existing != nullptr) {
      // The node's own (the toolkit's `nvidia-ctk runtime configure`, another operator): it
      // works there, and replacing it could point it at something that does not.
      if (notes != nullptr) {
        notes->push_back(absl::StrCat("kept the node's own runtime handler ", entry_path,
                                      "; gpuop never replaces one"));
      }
    } else {
      if (options.runtime_binary.empty()) {
        return absl::InvalidArgumentError("runtime options: runtime_binary is empty");
      }
      GPUOP_ASSIGN_OR_RETURN(toml::table entry, RuncHandlerEntry(table, options.runtime_binary,
                                                                 options, file, entry_path));
      entries.emplace_back(options.runtime_name, std::move(entry));
    }
  }
  if (options.add_gpuop_runtime) {
    const std::string entry_path =
        absl::StrCat(table.runtimes_path, ".", KeyPath({options.gpuop_runtime_name}));
    const toml::node* existing = table.runtimes->get(options.gpuop_runtime_name);
    GPUOP_RETURN_IF_ERROR(ExpectType(existing, toml::node_type::table, file, entry_path));
    GPUOP_ASSIGN_OR_RETURN(toml::table entry, RuncHandlerEntry(table, options.gpuop_runtime_binary,
                                                               options, file, entry_path));
    // gpuop's own name: an entry there that differs (an older gpuop's, a hand edit) is brought
    // to what gpuop wants, since gpuop's components depend on it.
    if (existing != nullptr && *existing->as_table() != entry && notes != nullptr) {
      notes->push_back(absl::StrCat("set the runtime handler ", entry_path,
                                    " to gpuop's (it differed; the name is gpuop's)"));
    }
    entries.emplace_back(options.gpuop_runtime_name, std::move(entry));
  }
  if (!entries.empty() && explicit_runc) WriteOutBuiltInRunc(table);
  for (auto& [name, entry] : entries) table.runtimes->insert_or_assign(name, std::move(entry));
  if (options.set_as_default) {
    table.containerd->insert_or_assign("default_runtime_name", options.runtime_name);
  }
  return absl::OkStatus();
}

// containerd 2.x reads a version 1 file but ignores its CRI settings: neither that file's CRI
// table nor its imports' count.
bool CriIgnored(const ContainerdConfig& config, const Options& options) {
  return config.version == 1 && options.containerd_major >= 2;
}

}  // namespace

absl::StatusOr<ContainerdConfig> InspectContainerdConfig(absl::string_view content,
                                                         const fs::path& file) {
  GPUOP_ASSIGN_OR_RETURN(const toml::table table, ParseToml(content, file));
  return Inspect(table, file);
}

absl::StatusOr<std::string> RenderContainerdDropIn(absl::string_view main,
                                                   const std::vector<ImportedFile>& imported,
                                                   const Options& options,
                                                   std::vector<std::string>* notes) {
  const fs::path main_file = kContainerdConfigPath;
  GPUOP_ASSIGN_OR_RETURN(const toml::table main_table, ParseToml(main, main_file));
  GPUOP_ASSIGN_OR_RETURN(ContainerdConfig config, Inspect(main_table, main_file));
  const bool merging = options.containerd_major >= 2;
  if (config.version == 1 && options.containerd_major == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        main_file.string(),
        ": no `version` (a version 1 file), which containerd 1.x and 2.x read differently (2.x "
        "ignores its CRI plugin settings), and containerd's version is unknown: gpuop could not "
        "ask containerd (is it running?); start containerd, or tell its major version "
        "(--containerd-major)"));
  }
  // containerd 2.x ignores a version 1 file's CRI settings: the node runs with the built-in
  // ones, which a version 3 drop-in changes key by key (a drop-in under a main file without
  // `version` may have any version).
  const bool ignored_v1 = CriIgnored(config, options);
  if (ignored_v1) {
    config = {.version = 3, .version_written = true, .cri_plugin = "io.containerd.cri.v1.runtime"};
  }

  const std::string cri_path = KeyPath({"plugins", config.cri_plugin});
  toml::table cri;
  if (ignored_v1) {
    // Neither the main file's CRI table nor its imports are read.
  } else if (const toml::table* table = main_table["plugins"][config.cri_plugin].as_table()) {
    GPUOP_RETURN_IF_ERROR(CheckCriTypes(*table, main_file, cri_path));
    cri = *table;
  }
  for (const ImportedFile& file : ignored_v1 ? std::vector<ImportedFile>{} : imported) {
    GPUOP_ASSIGN_OR_RETURN(const toml::table table, ParseToml(file.content, file.path));
    const toml::node* plugins = table.get("plugins");
    GPUOP_RETURN_IF_ERROR(ExpectType(plugins, toml::node_type::table, file.path, "plugins"));
    if (plugins == nullptr) continue;
    const toml::node* plugin = plugins->as_table()->get(config.cri_plugin);
    GPUOP_RETURN_IF_ERROR(ExpectType(plugin, toml::node_type::table, file.path,
                                     KeyPath({"plugins", config.cri_plugin})));
    if (plugin == nullptr) continue;
    GPUOP_RETURN_IF_ERROR(CheckCriTypes(*plugin->as_table(), file.path, cri_path));
    DeepMerge(cri, *plugin->as_table());
  }
  // containerd 2.x merges an import into the main file key by key (containerd PR #9982, in
  // 2.0), and version 3 and later are read by 2.x only: the drop-in holds only gpuop's changes,
  // so a later edit of the main file shows through. containerd 1.x replaces the CRI plugin's
  // table per file: for versions 1 and 2, unless 2.x is known to read them, it holds the whole
  // table.
  const bool minimal = config.version >= 3 || merging;
  const toml::table node_cri = cri;
  GPUOP_RETURN_IF_ERROR(
      ApplyOptions(cri, cri_path, options, /*explicit_runc=*/!minimal, main_file, notes));
  toml::table plugins;
  plugins.insert(config.cri_plugin, minimal ? DeepDiff(cri, node_cri) : std::move(cri));
  toml::table drop_in;
  if (config.version_written) drop_in.insert("version", config.version);
  drop_in.insert("plugins", std::move(plugins));
  const char* header = ignored_v1 ? kIgnoredV1Header
                       : minimal  ? kMinimalDropInHeader
                                  : kDropInHeader;
  return absl::StrCat(header, FormatToml(drop_in));
}

std::string NewContainerdConfig() {
  return absl::StrCat(kNewMainConfig, "imports = [\"", kContainerdImportEntry, "\"]\n");
}

Plan ContainerdPlan(const HostFiles& files, const Options& options,
                    std::vector<std::string>* notes) {
  ManagedFile drop_in{
      .path = kContainerdDropInPath,
      .kind = ManagedFile::Kind::kDropIn,
      .desired = [&files, options,
                  notes](const std::optional<std::string>&) -> absl::StatusOr<std::string> {
        GPUOP_ASSIGN_OR_RETURN(std::optional<std::string> main, files.Read(kContainerdConfigPath));
        // The main file is written after the drop-in: until then a node without one has none.
        if (!main.has_value()) main = NewContainerdConfig();
        GPUOP_ASSIGN_OR_RETURN(const ContainerdConfig config, InspectContainerdConfig(*main));
        std::vector<ImportedFile> imported;
        for (const std::string& entry :
             CriIgnored(config, options) ? std::vector<std::string>{} : config.imports) {
          fs::path pattern = entry;
          if (pattern.is_relative())
            pattern = fs::path(kContainerdConfigPath).parent_path() / entry;
          GPUOP_ASSIGN_OR_RETURN(const std::vector<fs::path> paths,
                                 files.Glob(pattern.lexically_normal().string()));
          for (const fs::path& path : paths) {
            if (path == kContainerdDropInPath) continue;
            GPUOP_ASSIGN_OR_RETURN(std::optional<std::string> content, files.Read(path));
            if (content.has_value()) imported.push_back({path, *std::move(content)});
          }
        }
        return RenderContainerdDropIn(*main, imported, options, notes);
      },
      .verb = "wrote",
      .mode_from = fs::path(kContainerdConfigPath),
  };
  ManagedFile main{
      .path = kContainerdConfigPath,
      .kind = ManagedFile::Kind::kEdited,
      .desired = [](const std::optional<std::string>& current) -> absl::StatusOr<std::string> {
        if (!current.has_value()) return NewContainerdConfig();
        return AddContainerdImport(*current);
      },
      .verb = "added imports to",
  };
  return {std::move(drop_in), std::move(main)};
}

}  // namespace gpuop::agent::runtime
