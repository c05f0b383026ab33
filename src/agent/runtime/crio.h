#ifndef GPUOP_AGENT_RUNTIME_CRIO_H_
#define GPUOP_AGENT_RUNTIME_CRIO_H_

// CRI-O's configuration: gpuop's drop-in in /etc/crio/crio.conf.d. CRI-O merges drop-ins key by
// key over crio.conf, so the drop-in holds only gpuop's keys; the main file is never edited.

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/runtime/host_files.h"
#include "agent/runtime/plan.h"
#include "agent/runtime/runtime.h"

namespace gpuop::agent::runtime {

inline constexpr char kCrioConfigPath[] = "/etc/crio/crio.conf";
inline constexpr char kCrioDropInDir[] = "/etc/crio/crio.conf.d";
inline constexpr char kCrioDropInPath[] = "/etc/crio/crio.conf.d/99-gpuop.toml";

// gpuop's drop-in, given the configuration CRI-O loads before it (crio.conf, then the other
// drop-ins in name order): [crio.runtime] cdi_spec_dirs when enable_cdi; when add_nvidia_runtime,
// [crio.runtime.runtimes.<runtime_name>] copied from the default runtime's entry (or crun's, or
// runc's; never one of gpuop's handlers) with runtime_path = runtime_binary and runtime_type =
// "oci", unless the loaded files already define a runtime of that name, which is kept (and said
// in `notes`); when add_gpuop_runtime, [crio.runtime.runtimes.<gpuop_runtime_name>] made the same
// way with runtime_path = gpuop_runtime_binary, whether or not the loaded files define one (gpuop
// owns the name; one that differed is said in `notes`); default_runtime = runtime_name when
// set_as_default (gpuop's handler is never the default). FailedPrecondition naming the file, line
// and problem for invalid TOML or a wrong type at a key gpuop reads; InvalidArgument when the
// nvidia handler is to be added and runtime_binary is empty.
[[nodiscard]] absl::StatusOr<std::string> RenderCrioDropIn(
    const std::vector<ImportedFile>& loaded, const Options& options,
    std::vector<std::string>* notes = nullptr);

// The drop-in, bound to `files` (which must outlive the plan); notes as ContainerdPlan.
Plan CrioPlan(const HostFiles& files, const Options& options,
              std::vector<std::string>* notes = nullptr);

}  // namespace gpuop::agent::runtime

#endif  // GPUOP_AGENT_RUNTIME_CRIO_H_
