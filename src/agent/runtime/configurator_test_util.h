#ifndef GPUOP_AGENT_RUNTIME_CONFIGURATOR_TEST_UTIL_H_
#define GPUOP_AGENT_RUNTIME_CONFIGURATOR_TEST_UTIL_H_

// The Configurator tests' shared fixture: a host root with NVIDIA's toolkit runtime installed, a
// recording restarter, and the options and readings the tests use.

#include <filesystem>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <toml++/toml.h>

#include "agent/runtime/configurator.h"
#include "agent/runtime/fake_restarter.h"
#include "agent/runtime/test_util.h"
#include "agent/runtime/toml_util.h"

namespace gpuop::agent::runtime {

namespace fs = std::filesystem;

inline constexpr char kImportsLine[] = "imports = [\"/etc/containerd/conf.d/99-gpuop*.toml\"]\n";
inline constexpr char kMainBackup[] = "/etc/containerd/config.toml.gpuop-backup";
inline constexpr char kToolkitRuntime[] = "/usr/local/nvidia/toolkit/nvidia-container-runtime";

// As on a node whose containerd is 1.x, which reads every sample (a 1.x containerd would not
// read the version 3 one, but the files do not depend on it).
inline Options GpuOptions() {
  Options options;
  options.add_nvidia_runtime = true;
  options.runtime_binary = kToolkitRuntime;
  options.containerd_major = 1;
  return options;
}

// An executable file at host path `path`.
inline void PutBinary(const TempRoot& root, const std::string& path) {
  root.Put(path, "#!/bin/sh\n");
  fs::permissions(root / path, fs::perms::owner_all | fs::perms::group_read |
                                   fs::perms::group_exec | fs::perms::others_read |
                                   fs::perms::others_exec);
}

inline std::vector<FileState> States(const absl::StatusOr<StatusReport>& report) {
  EXPECT_TRUE(report.ok()) << report.status();
  std::vector<FileState> states;
  if (report.ok()) {
    for (const FileStatus& file : report->files) states.push_back(file.state);
  }
  return states;
}

class RuntimeConfiguratorTest : public ::testing::Test {
 protected:
  // The NVIDIA runtime where its toolkit container installs it.
  RuntimeConfiguratorTest() { PutBinary(root_, kToolkitRuntime); }

  absl::StatusOr<ChangeReport> Configure(Runtime runtime, const Options& options = GpuOptions()) {
    return configurator_.Configure(runtime, options);
  }
  absl::StatusOr<ChangeReport> Unconfigure(Runtime runtime, const Options& options = GpuOptions(),
                                           bool force = false) {
    return configurator_.Unconfigure(runtime, options, force);
  }
  absl::StatusOr<StatusReport> Status(Runtime runtime, const Options& options = GpuOptions()) {
    return configurator_.Status(runtime, options);
  }
  fs::perms Mode(const fs::path& host_path) {
    return fs::status(root_ / host_path).permissions() & fs::perms::all;
  }

  TempRoot root_;
  RecordingRestarter restarter_;
  Configurator configurator_{root_.path(), restarter_};
};

// The drop-in's CRI runtime table for containerd version 3.
inline toml::table CriRuntime(const std::string& drop_in) {
  const toml::table table = toml::parse(drop_in);
  const toml::table* cri = table["plugins"]["io.containerd.cri.v1.runtime"].as_table();
  return cri != nullptr ? *cri : toml::table{};
}

// The CRI runtime plugin's table as containerd 2.x sees it: the drop-in merged into the main
// file key by key (simulated with DeepMerge; test/node's runtime test shows it with the real
// containerd).
inline toml::table EffectiveCriRuntime(const std::string& main, const std::string& drop_in) {
  toml::table cri = CriRuntime(main);
  DeepMerge(cri, CriRuntime(drop_in));
  return cri;
}

}  // namespace gpuop::agent::runtime

#endif  // GPUOP_AGENT_RUNTIME_CONFIGURATOR_TEST_UTIL_H_
