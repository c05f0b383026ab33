#include "agent/runtime/containerd.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <toml++/toml.h>

#include "absl/strings/str_replace.h"
#include "agent/runtime/containerd_test_util.h"
#include "agent/runtime/containerd_version.h"
#include "agent/runtime/test_util.h"

namespace gpuop::agent::runtime {
namespace {

using ::testing::HasSubstr;

constexpr char kImportsLine[] = "imports = [\"/etc/containerd/conf.d/99-gpuop*.toml\"]";
constexpr char kEntry[] = "\"/etc/containerd/conf.d/99-gpuop*.toml\"";

TEST(RuntimeContainerdTest, InspectsSupportedVersions) {
  const absl::StatusOr<ContainerdConfig> v2 =
      InspectContainerdConfig(Testdata("containerd_v2.toml"));
  ASSERT_TRUE(v2.ok()) << v2.status();
  EXPECT_EQ(v2->version, 2);
  EXPECT_EQ(v2->cri_plugin, "io.containerd.grpc.v1.cri");
  const absl::StatusOr<ContainerdConfig> v3 =
      InspectContainerdConfig(Testdata("containerd_v3.toml"));
  ASSERT_TRUE(v3.ok()) << v3.status();
  EXPECT_EQ(v3->cri_plugin, "io.containerd.cri.v1.runtime");
  const absl::StatusOr<ContainerdConfig> v4 = InspectContainerdConfig("version = 4\n");
  ASSERT_TRUE(v4.ok()) << v4.status();
  EXPECT_EQ(v4->cri_plugin, "io.containerd.cri.v1.runtime");
  // Without `version`, or with 0 or 1: version 1, whose plugins go by their short IDs.
  for (const std::string& content : {Testdata("containerd_v1.toml"), std::string(),
                                     std::string("version = 0\n"), std::string("version = 1\n")}) {
    const absl::StatusOr<ContainerdConfig> v1 = InspectContainerdConfig(content);
    ASSERT_TRUE(v1.ok()) << content << ": " << v1.status();
    EXPECT_EQ(v1->version, 1);
    EXPECT_EQ(v1->version_written, !content.empty() && content[0] == 'v');
    EXPECT_EQ(v1->cri_plugin, "cri");
  }
}

TEST(RuntimeContainerdTest, RefusesWhatItDoesNotSupport) {
  struct Case {
    std::string content;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"version = 5\n", "/etc/containerd/config.toml:1:11: version 5 is not a known config"},
      {"version = -1\n", "version -1 is not a known config version"},
      {"disabled_plugins = [\"cri\"]\n", "disabled_plugins turns off the CRI plugin (\"cri\")"},
      {"[plugins.\"io.containerd.grpc.v1.cri\"]\nenable_cdi = true\n",
       "plugins.\"io.containerd.grpc.v1.cri\" in a version 1 "
       "configuration, where containerd 1.x reads the CRI plugin's settings from plugins.cri "
       "only"},
      {"[plugins]\ncri = 1\n", "plugins.cri is an integer, expected a table"},
      {"\nversion = \"2\"\n",
       "/etc/containerd/config.toml:2:11: version is a string, expected "
       "an integer"},
      {Testdata("containerd_malformed.toml"), "/etc/containerd/config.toml:6:47: invalid TOML"},
      {"version = 2\nimports = \"/etc/x.toml\"\n",
       "/etc/containerd/config.toml:2:11: imports is a string, expected an array"},
      {"version = 2\nimports = [\"/a.toml\", 3]\n", "imports[1] is an integer, expected a string"},
      {"version = 2\ndisabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n",
       "disabled_plugins turns off the CRI plugin"},
      {"version = 3\ndisabled_plugins = [\"io.containerd.cri.v1.runtime\"]\n",
       "disabled_plugins turns off the CRI plugin"},
      {"version = 2\nplugins = 1\n", "plugins is an integer, expected a table"},
      {"version = 2\n[plugins]\n\"io.containerd.grpc.v1.cri\" = \"x\"\n",
       "plugins.\"io.containerd.grpc.v1.cri\" is a string, expected a table"},
  };
  for (const Case& c : cases) {
    const absl::StatusOr<ContainerdConfig> config = InspectContainerdConfig(c.content);
    ASSERT_FALSE(config.ok()) << c.content;
    EXPECT_EQ(config.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(Message(config.status()), HasSubstr(c.message)) << c.content;
    EXPECT_FALSE(AddContainerdImport(c.content).ok()) << c.content;
    EXPECT_FALSE(RenderContainerdDropIn(c.content, {}, RuntimeOptions()).ok()) << c.content;
  }
}

TEST(RuntimeContainerdTest, AddsOneImportsLineAfterTheVersionLine) {
  const std::string original = Testdata("containerd_v2.toml");
  const absl::StatusOr<std::string> edited = AddContainerdImport(original);
  ASSERT_TRUE(edited.ok()) << edited.status();
  EXPECT_EQ(*edited,
            absl::StrReplaceAll(original, {{"\nversion = 2\n",
                                            absl::StrCat("\nversion = 2\n", kImportsLine, "\n")}}));
}

TEST(RuntimeContainerdTest, AddsToAnExistingImportsArrayInPlace) {
  const std::string original = Testdata("containerd_imports.toml");
  const absl::StatusOr<std::string> edited = AddContainerdImport(original);
  ASSERT_TRUE(edited.ok()) << edited.status();
  EXPECT_EQ(*edited,
            absl::StrReplaceAll(original, {{"\"/etc/containerd/registry.toml\",",
                                            absl::StrCat("\"/etc/containerd/registry.toml\""
                                                         ", ",
                                                         kEntry)}}));
}

TEST(RuntimeContainerdTest, ImportsEditsAreMinimal) {
  struct Case {
    std::string before;
    std::string after;
  };
  const std::string e = kEntry;
  const std::vector<Case> cases = {
      {"version = 2\nimports = []\n", "version = 2\nimports = [" + e + "]\n"},
      {"version = 2\nimports = [ ]  # none\n", "version = 2\nimports = [" + e + " ]  # none\n"},
      {"version = 2\nimports = [\"/a.toml\"]\n",
       "version = 2\nimports = [\"/a.toml\", " + e + "]\n"},
      {"imports = ['/a]#.toml'] # ]\nversion = 2\n",
       "imports = ['/a]#.toml', " + e + "] # ]\nversion = 2\n"},
      {"version = 2\nimports = [\n  \"/a.toml\",\n  # \"/b.toml\",\n]\n",
       "version = 2\nimports = [\n  \"/a.toml\", " + e + "\n  # \"/b.toml\",\n]\n"},
      {"version = 2\nimports = [\"\"\"/a\"b.toml\"\"\"]\n",
       "version = 2\nimports = [\"\"\"/a\"b.toml\"\"\", " + e + "]\n"},
      {"version = 2\nimports = [\"/a\\\"].toml\"]\n",
       "version = 2\nimports = [\"/a\\\"].toml\", " + e + "]\n"},
      // Line endings and a missing final newline are kept as they are.
      {"version = 2\r\n[plugins]\r\n",
       "version = 2\r\n" + std::string(kImportsLine) + "\r\n[plugins]\r\n"},
      {"version = 2", "version = 2\n" + std::string(kImportsLine) + "\n"},
      {"# c\n\nversion = 3 # v\n[plugins]\n",
       "# c\n\nversion = 3 # v\n" + std::string(kImportsLine) + "\n[plugins]\n"},
  };
  for (const Case& c : cases) {
    const absl::StatusOr<std::string> edited = AddContainerdImport(c.before);
    ASSERT_TRUE(edited.ok()) << c.before << ": " << edited.status();
    EXPECT_EQ(*edited, c.after);
  }
}

TEST(RuntimeContainerdTest, AVersion1FileGetsItsImportsAheadOfItsTables) {
  // Top-level keys must come before the first table: after the opening comments, before the
  // first key or table.
  const std::string line = absl::StrCat(kImportsLine, "\n");
  const std::string original = Testdata("containerd_v1.toml");
  absl::StatusOr<std::string> edited = AddContainerdImport(original);
  ASSERT_TRUE(edited.ok()) << edited.status();
  EXPECT_EQ(*edited,
            absl::StrReplaceAll(original, {{"\nroot =", absl::StrCat("\n", line, "root =")}}));
  struct Case {
    std::string before;
    std::string after;
  };
  const std::vector<Case> cases = {
      {"", line},
      {"# only a comment", "# only a comment\n" + line},
      {"\n  # indented\n\n[plugins.cri]\n", "\n  # indented\n\n" + line + "[plugins.cri]\n"},
      {"root = \"/r\"\r\n", absl::StrCat(kImportsLine, "\r\nroot = \"/r\"\r\n")},
  };
  for (const Case& c : cases) {
    edited = AddContainerdImport(c.before);
    ASSERT_TRUE(edited.ok()) << c.before << ": " << edited.status();
    EXPECT_EQ(*edited, c.after);
  }
}

TEST(RuntimeContainerdTest, CoveredImportsLeaveTheFileAlone) {
  for (const std::string imports :
       {"[\"/etc/containerd/conf.d/*.toml\"]", "[\"conf.d/*.toml\"]", "[\"./conf.d/99-*.toml\"]",
        "[\"/etc/containerd/conf.d/99-gpuop.toml\"]",
        "[\"/x.toml\", \"/etc/containerd/conf.d/*\"]"}) {
    const std::string content = absl::StrCat("version = 2\nimports = ", imports, "\n");
    const absl::StatusOr<std::string> edited = AddContainerdImport(content);
    ASSERT_TRUE(edited.ok()) << edited.status();
    EXPECT_EQ(*edited, content);
  }
  EXPECT_FALSE(ImportsCover({"/etc/containerd/conf.d/*/x.toml", "/etc/containerd/*.toml",
                             "/etc/containerd/conf.d/other.toml"},
                            kContainerdConfigPath, kContainerdDropInPath));
}

TEST(RuntimeContainerdTest, RendersTheV2DropIn) {
  const absl::StatusOr<std::string> drop_in =
      RenderContainerdDropIn(Testdata("containerd_v2.toml"), {}, RuntimeOptions());
  ASSERT_TRUE(drop_in.ok()) << drop_in.status();
  ExpectGolden(*drop_in, "containerd_v2_dropin.toml");

  const toml::table table = Parse(*drop_in);
  EXPECT_EQ(table["version"].value<int64_t>(), 2);
  const auto cri = table["plugins"]["io.containerd.grpc.v1.cri"];
  EXPECT_EQ(cri["enable_cdi"].value<bool>(), true);
  ASSERT_TRUE(cri["cdi_spec_dirs"].is_array());
  EXPECT_EQ(*cri["cdi_spec_dirs"].as_array(), (toml::array{"/etc/cdi", "/var/run/cdi"}));
  // The rest of the CRI table is kept.
  EXPECT_EQ(cri["sandbox_image"].value<std::string>(), "registry.k8s.io/pause:3.9");
  EXPECT_EQ(cri["registry"]["config_path"].value<std::string>(), "/etc/containerd/certs.d");
  EXPECT_EQ(cri["cni"]["bin_dir"].value<std::string>(), "/opt/cni/bin");
  const auto runtimes = cri["containerd"]["runtimes"];
  EXPECT_EQ(runtimes["runc"]["options"]["SystemdCgroup"].value<bool>(), true);
  const auto nvidia = runtimes["nvidia"];
  EXPECT_EQ(nvidia["runtime_type"].value<std::string>(), "io.containerd.runc.v2");
  EXPECT_EQ(nvidia["privileged_without_host_devices"].value<bool>(), false);
  EXPECT_EQ(nvidia["options"]["SystemdCgroup"].value<bool>(), true);
  EXPECT_EQ(nvidia["options"]["BinaryName"].value<std::string>(),
            "/usr/local/nvidia/toolkit/nvidia-container-runtime");
  EXPECT_EQ(cri["containerd"]["default_runtime_name"].value<std::string>(), "runc");
  // Only the CRI plugin: other plugins and top-level settings stay in the main file alone.
  EXPECT_EQ(table["plugins"].as_table()->size(), 1u);
  EXPECT_FALSE(table.contains("grpc"));
  EXPECT_FALSE(table.contains("root"));
}

TEST(RuntimeContainerdTest, RendersTheV1DropIn) {
  Options options = RuntimeOptions();
  options.containerd_major = 1;
  const absl::StatusOr<std::string> drop_in =
      RenderContainerdDropIn(Testdata("containerd_v1.toml"), {}, options);
  ASSERT_TRUE(drop_in.ok()) << drop_in.status();
  ExpectGolden(*drop_in, "containerd_v1_dropin.toml");

  // No version, as in the main file, so that both are read as version 1; the CRI plugin under
  // its short ID, with the whole table.
  const toml::table table = Parse(*drop_in);
  EXPECT_FALSE(table.contains("version"));
  const auto cri = table["plugins"]["cri"];
  EXPECT_EQ(cri["sandbox_image"].value<std::string>(), "k8s.gcr.io/pause:3.2");
  EXPECT_EQ(cri["containerd"]["snapshotter"].value<std::string>(), "overlayfs");
  EXPECT_EQ(cri["enable_cdi"].value<bool>(), true);
  const auto runtimes = cri["containerd"]["runtimes"];
  EXPECT_EQ(runtimes["nvidia"]["runtime_type"].value<std::string>(), "io.containerd.runc.v2");
  // No file defines runc: containerd's built-in entry is written out next to the handler.
  ASSERT_TRUE(runtimes["runc"].is_table());
  EXPECT_EQ(*runtimes["runc"].as_table(), (toml::table{{"runtime_type", "io.containerd.runc.v2"}}));
  EXPECT_FALSE(table["plugins"]["io.containerd.grpc.v1.cri"]);

  const absl::StatusOr<std::string> explicit_one =
      RenderContainerdDropIn("version = 1\n", {}, options);
  ASSERT_TRUE(explicit_one.ok()) << explicit_one.status();
  EXPECT_EQ(Parse(*explicit_one)["version"].value<int64_t>(), 1);
}

TEST(RuntimeContainerdTest, AVersion1FileOnContainerd2GetsChangesToTheBuiltInCriSettings) {
  // containerd 2.x reads the file as version 1 and ignores its CRI table: the drop-in is a
  // version 3 file of gpuop's changes alone, none of the file's CRI settings copied in.
  Options options = RuntimeOptions();
  options.containerd_major = 2;
  const std::vector<ImportedFile> imported = {
      {"/etc/containerd/conf.d/x.toml", "[plugins.cri]\n  sandbox_image = \"x\"\n"}};
  const absl::StatusOr<std::string> drop_in =
      RenderContainerdDropIn(Testdata("containerd_v1.toml"), imported, options);
  ASSERT_TRUE(drop_in.ok()) << drop_in.status();
  const toml::table table = Parse(*drop_in);
  EXPECT_EQ(table["version"].value<int64_t>(), 3);
  ASSERT_TRUE(table["plugins"].is_table());
  EXPECT_EQ(table["plugins"].as_table()->size(), 1u);
  const auto cri = table["plugins"]["io.containerd.cri.v1.runtime"];
  EXPECT_EQ(cri["enable_cdi"].value<bool>(), true);
  EXPECT_FALSE(cri["sandbox_image"]);
  EXPECT_FALSE(cri["containerd"]["snapshotter"]);
  const auto runtimes = cri["containerd"]["runtimes"];
  EXPECT_TRUE(runtimes["nvidia"]["options"]["BinaryName"].is_string());
  EXPECT_FALSE(runtimes["runc"]);  // the built-in one stays: 2.x merges key by key
  EXPECT_THAT(*drop_in, HasSubstr("ignores its CRI plugin settings"));
}

TEST(RuntimeContainerdTest, AVersion1FileIsRefusedWhileContainerdsVersionIsUnknown) {
  const absl::StatusOr<std::string> drop_in =
      RenderContainerdDropIn(Testdata("containerd_v1.toml"), {}, RuntimeOptions());
  EXPECT_EQ(drop_in.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(drop_in.status()),
              HasSubstr("/etc/containerd/config.toml: no `version` (a version 1 file), which "
                        "containerd 1.x and 2.x read differently"));
}

TEST(RuntimeContainerdTest, OnContainerd2AVersion2DropInHoldsOnlyGpuopsChanges) {
  Options options = RuntimeOptions();
  options.containerd_major = 2;
  const absl::StatusOr<std::string> drop_in =
      RenderContainerdDropIn(Testdata("containerd_v2.toml"), {}, options);
  ASSERT_TRUE(drop_in.ok()) << drop_in.status();
  const toml::table table = Parse(*drop_in);
  EXPECT_EQ(table["version"].value<int64_t>(), 2);
  const auto cri = table["plugins"]["io.containerd.grpc.v1.cri"];
  EXPECT_EQ(cri["enable_cdi"].value<bool>(), true);
  EXPECT_FALSE(cri["sandbox_image"]);
  EXPECT_FALSE(cri["containerd"]["runtimes"]["runc"]);
  EXPECT_EQ(cri["containerd"]["runtimes"]["nvidia"]["options"]["SystemdCgroup"].value<bool>(),
            true);
}

TEST(RuntimeContainerdTest, ContainerdVersionsAreRead) {
  EXPECT_EQ(ParseContainerdMajor("v2.2.9").value_or(-1), 2);
  EXPECT_EQ(ParseContainerdMajor("1.7.27+unknown").value_or(-1), 1);
  EXPECT_EQ(ParseContainerdMajor(" v2.1.0-rc.1\n").value_or(-1), 2);
  for (const char* bad : {"", "v", "2", "x.1", "v-1.2"}) {
    EXPECT_EQ(ParseContainerdMajor(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  // Nothing listens there.
  EXPECT_EQ(
      AskContainerdMajor("/nonexistent/containerd.sock", absl::Milliseconds(200)).status().code(),
      absl::StatusCode::kUnavailable);
}

TEST(RuntimeContainerdTest, TheNewMainFileKeepsContainerdsDefaults) {
  // Nothing but the version both 1.7 and 2.x read and the import: no default is set apart.
  const std::string created = NewContainerdConfig();
  const toml::table created_table = Parse(created);
  EXPECT_EQ(created_table,
            (toml::table{{"version", 2},
                         {"imports", toml::array{"/etc/containerd/conf.d/99-gpuop*.toml"}}}));
  EXPECT_EQ(AddContainerdImport(created).value_or(""), created);
  const absl::StatusOr<std::string> drop_in = RenderContainerdDropIn(created, {}, RuntimeOptions());
  ASSERT_TRUE(drop_in.ok()) << drop_in.status();
  const toml::table table_in = Parse(*drop_in);
  const auto cri = table_in["plugins"]["io.containerd.grpc.v1.cri"];
  EXPECT_EQ(cri["enable_cdi"].value<bool>(), true);
  ASSERT_TRUE(cri["cdi_spec_dirs"].is_array());
  EXPECT_EQ(*cri["cdi_spec_dirs"].as_array(), (toml::array{"/etc/cdi", "/var/run/cdi"}));
  EXPECT_EQ(cri["containerd"]["runtimes"]["runc"]["runtime_type"].value<std::string>(),
            "io.containerd.runc.v2");
  EXPECT_TRUE(cri["containerd"]["runtimes"]["nvidia"]["options"]["BinaryName"].is_string());
}

TEST(RuntimeContainerdTest, RendersTheV3DropIn) {
  Options options = RuntimeOptions();
  options.set_as_default = true;
  const absl::StatusOr<std::string> drop_in =
      RenderContainerdDropIn(Testdata("containerd_v3.toml"), {}, options);
  ASSERT_TRUE(drop_in.ok()) << drop_in.status();
  ExpectGolden(*drop_in, "containerd_v3_dropin.toml");

  const toml::table table = Parse(*drop_in);
  EXPECT_EQ(table["version"].value<int64_t>(), 3);
  EXPECT_FALSE(table["plugins"]["io.containerd.cri.v1.images"]);
  const auto cri = table["plugins"]["io.containerd.cri.v1.runtime"];
  EXPECT_EQ(cri["enable_cdi"].value<bool>(), true);
  EXPECT_EQ(cri["containerd"]["default_runtime_name"].value<std::string>(), "nvidia");
  const auto nvidia = cri["containerd"]["runtimes"]["nvidia"];
  EXPECT_EQ(nvidia["sandboxer"].value<std::string>(), "podsandbox");
  EXPECT_EQ(nvidia["options"]["SystemdCgroup"].value<bool>(), true);
  EXPECT_TRUE(nvidia["options"]["BinaryName"].is_string());
}

TEST(RuntimeContainerdTest, DropInOnlyWithCdiLeavesRuntimesAlone) {
  const absl::StatusOr<std::string> drop_in =
      RenderContainerdDropIn(Testdata("containerd_v2.toml"), {}, Options{});
  ASSERT_TRUE(drop_in.ok()) << drop_in.status();
  const toml::table table = Parse(*drop_in);
  const auto runtimes = table["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"];
  EXPECT_TRUE(runtimes["runc"]);
  EXPECT_FALSE(runtimes["nvidia"]);
}

TEST(RuntimeContainerdTest, DropInMergesTheImportedFiles) {
  const absl::StatusOr<std::string> drop_in = RenderContainerdDropIn(
      Testdata("containerd_imports.toml"),
      {{"/etc/containerd/registry.toml", Testdata("containerd_registry.toml")}}, RuntimeOptions());
  ASSERT_TRUE(drop_in.ok()) << drop_in.status();
  const toml::table table = Parse(*drop_in);
  const auto cri = table["plugins"]["io.containerd.grpc.v1.cri"];
  EXPECT_EQ(*cri["registry"]["mirrors"]["docker.io"]["endpoint"].as_array(),
            toml::array{"https://mirror.internal.example"});
  EXPECT_EQ(cri["sandbox_image"].value<std::string>(), "registry.k8s.io/pause:3.9");
  EXPECT_TRUE(cri["containerd"]["runtimes"]["nvidia"]["options"]["SystemdCgroup"].value<bool>());
}

TEST(RuntimeContainerdTest, DropInMergesCdiSpecDirsWithTheNodes) {
  // docs/cri/config.md: cdi_spec_dirs is a list under the CRI plugin; a user's extra directory
  // must survive gpuop's edit.
  const std::string main = R"(version = 3
[plugins.'io.containerd.cri.v1.runtime']
  enable_cdi = false
  cdi_spec_dirs = ["/opt/vendor/cdi", "/etc/cdi"]
)";
  Options options;
  options.cdi_spec_dirs = {"/etc/cdi", "/var/run/cdi", "/run/gpuop/cdi"};
  const absl::StatusOr<std::string> drop_in = RenderContainerdDropIn(main, {}, options);
  ASSERT_TRUE(drop_in.ok()) << drop_in.status();
  const toml::table table = Parse(*drop_in);
  const auto cri = table["plugins"]["io.containerd.cri.v1.runtime"];
  EXPECT_EQ(cri["enable_cdi"].value<bool>(), true);
  ASSERT_TRUE(cri["cdi_spec_dirs"].is_array());
  EXPECT_EQ(*cri["cdi_spec_dirs"].as_array(),
            (toml::array{"/opt/vendor/cdi", "/etc/cdi", "/var/run/cdi", "/run/gpuop/cdi"}));
}

TEST(RuntimeContainerdTest, DropInStartsCdiSpecDirsFromContainerdsDefault) {
  // No file sets cdi_spec_dirs: containerd uses its default, which the merge starts from.
  Options options;
  options.cdi_spec_dirs = {"/run/gpuop/cdi"};
  const absl::StatusOr<std::string> drop_in = RenderContainerdDropIn("version = 3\n", {}, options);
  ASSERT_TRUE(drop_in.ok()) << drop_in.status();
  const toml::table table = Parse(*drop_in);
  const auto cri = table["plugins"]["io.containerd.cri.v1.runtime"];
  ASSERT_TRUE(cri["cdi_spec_dirs"].is_array());
  EXPECT_EQ(*cri["cdi_spec_dirs"].as_array(),
            (toml::array{"/etc/cdi", "/var/run/cdi", "/run/gpuop/cdi"}));
}

TEST(RuntimeContainerdTest, DropInKeepsTheToolkitsNvidiaDropIn) {
  // The main file as nvidia-ctk leaves it in drop-in mode: imports conf.d/*.toml, which covers
  // gpuop's drop-in too, so the main file is not edited again.
  const std::string main = absl::StrReplaceAll(
      Testdata("containerd_v2.toml"),
      {{"version = 2\n", "version = 2\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n"}});
  const absl::StatusOr<std::string> edited = AddContainerdImport(main);
  ASSERT_TRUE(edited.ok()) << edited.status();
  EXPECT_EQ(*edited, main);

  std::vector<std::string> notes;
  const absl::StatusOr<std::string> drop_in = RenderContainerdDropIn(
      main, {{"/etc/containerd/conf.d/99-nvidia.toml", Testdata("containerd_nvidia_dropin.toml")}},
      RuntimeOptions(), &notes);
  ASSERT_TRUE(drop_in.ok()) << drop_in.status();
  const toml::table table = Parse(*drop_in);
  const auto runtimes = table["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"];
  // The toolkit's handler as it wrote it, not gpuop's binary; runc still there.
  EXPECT_EQ(runtimes["nvidia"]["options"]["BinaryName"].value<std::string>(),
            "/usr/bin/nvidia-container-runtime");
  EXPECT_EQ(runtimes["runc"]["options"]["SystemdCgroup"].value<bool>(), true);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_THAT(notes[0], HasSubstr("kept the node's own runtime handler"));
}

TEST(RuntimeContainerdTest, DropInStartsFromRuncWhenTheDefaultIsNotRunc) {
  const std::string main = R"(version = 2
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "kata"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]
  runtime_type = "io.containerd.kata.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
    SystemdCgroup = true
)";
  const absl::StatusOr<std::string> drop_in = RenderContainerdDropIn(main, {}, RuntimeOptions());
  ASSERT_TRUE(drop_in.ok()) << drop_in.status();
  const toml::table table = Parse(*drop_in);
  const auto nvidia =
      table["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]["nvidia"];
  EXPECT_EQ(nvidia["runtime_type"].value<std::string>(), "io.containerd.runc.v2");
  EXPECT_TRUE(nvidia["options"]["SystemdCgroup"].value<bool>());
}

TEST(RuntimeContainerdTest, DropInWithoutACriTableHasOnlyGpuopKeys) {
  const absl::StatusOr<std::string> drop_in =
      RenderContainerdDropIn("version = 3\n", {}, RuntimeOptions());
  ASSERT_TRUE(drop_in.ok()) << drop_in.status();
  const toml::table table = Parse(*drop_in);
  const auto nvidia =
      table["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]["runtimes"]["nvidia"];
  EXPECT_EQ(nvidia["runtime_type"].value<std::string>(), "io.containerd.runc.v2");
  EXPECT_EQ(nvidia["options"].as_table()->size(), 1u);
}

TEST(RuntimeContainerdTest, DropInRefusesWrongTypesAtTouchedKeys) {
  struct Case {
    std::string main;
    std::string message;
  };
  const std::string cri = "[plugins.\"io.containerd.grpc.v1.cri\"]\n";
  const std::vector<Case> cases = {
      {"version = 2\n" + cri + "enable_cdi = \"yes\"\n",
       "config.toml:3:14: plugins.\"io.containerd.grpc.v1.cri\".enable_cdi is a string, expected "
       "a boolean"},
      {"version = 2\n" + cri + "cdi_spec_dirs = \"/etc/cdi\"\n", ".cdi_spec_dirs is a string"},
      {"version = 2\n" + cri + "containerd = 3\n", ".containerd is an integer, expected a table"},
      {"version = 2\n" + cri + "containerd.default_runtime_name = 1\n",
       ".containerd.default_runtime_name is an integer, expected a string"},
      {"version = 2\n" + cri + "containerd.runtimes.runc = \"runc\"\n",
       ".containerd.runtimes.runc is a string, expected a table"},
      {"version = 2\n" + cri + "containerd.runtimes.runc.options = [1]\n",
       ".containerd.runtimes.runc.options is an array, expected a table"},
      {"version = 2\n" + cri + "containerd.runtimes.nvidia = true\n",
       ".containerd.runtimes.nvidia is a boolean, expected a table"},
  };
  for (const Case& c : cases) {
    const absl::StatusOr<std::string> drop_in =
        RenderContainerdDropIn(c.main, {}, RuntimeOptions());
    ASSERT_FALSE(drop_in.ok()) << c.main;
    EXPECT_EQ(drop_in.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(Message(drop_in.status()), HasSubstr(c.message)) << c.main;
  }
  // A wrong type in an imported file names that file.
  const absl::StatusOr<std::string> drop_in = RenderContainerdDropIn(
      "version = 2\n", {{"/etc/containerd/bad.toml", "version = 2\n" + cri + "enable_cdi = 1\n"}},
      RuntimeOptions());
  ASSERT_FALSE(drop_in.ok());
  EXPECT_THAT(Message(drop_in.status()), HasSubstr("/etc/containerd/bad.toml:3:14:"));
}

}  // namespace
}  // namespace gpuop::agent::runtime
