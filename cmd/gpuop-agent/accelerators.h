#ifndef GPUOP_CMD_GPUOP_AGENT_ACCELERATORS_H_
#define GPUOP_CMD_GPUOP_AGENT_ACCELERATORS_H_

#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "absl/status/statusor.h"
#include "agent/health/recovery_evidence.h"
#include "agent/health/tracker.h"
#include "hw/accelerator.h"
#include "hw/nvml/nvidia_smi.h"
#include "kube/client/client.h"

namespace gpuop::cmd {

// Where the node's GPU drivers are, as flags of every subcommand that opens them.
struct HardwareFlags {
  // "auto": libnvidia-ml.so.1 under the driver container's root, then under the host's root,
  // then the dynamic loader's search (hw::ResolveDriverLibrary); or a path to load as it is.
  std::string nvml_library = "auto";
  std::string sysfs_root = "/sys";
  std::string dev_root = "/dev";
  // Where the host's root is mounted ("/host" in a component's container).
  std::string host_root = "/";
  // Where gpuop's driver container exposes its root, as this process sees it; empty:
  // <host_root>/run/nvidia/driver.
  std::string driver_container_root;

  // The driver container's root as this process sees it.
  std::string DriverContainerRoot() const;
  // The library to dlopen for `flag` ("auto" or a path) and `soname`.
  std::string Library(const std::string& flag, const char* soname) const;
  std::string NvmlLibrary() const;
  // nvidia-smi in the root NVML was loaded from (`nvml_path`): what resets GPUs and creates the
  // MIG instances' device nodes.
  hw::NvidiaSmi NvidiaSmiInDriverRoot(const std::string& nvml_path) const;
};

// The node's accelerators: NVIDIA when NVML loads, AMD when amdgpu has GPUs. Why a vendor is
// absent goes to stderr; a node without any is an empty list.
std::vector<std::unique_ptr<hw::Accelerator>> OpenAccelerators(const HardwareFlags& flags);

// A client for the API server from --kubeconfig, or in-cluster configuration when empty.
absl::StatusOr<std::unique_ptr<kube::Client>> MakeClient(const std::string& kubeconfig,
                                                         const std::string& component);

// Registers the flags on `command`.
void AddHardwareFlags(CLI::App& command, HardwareFlags& flags);

// For a command that works against the API server until SIGTERM or SIGINT: blocks those signals,
// makes the client (printing "<command>: <error>" and exiting 1 when it cannot) and starts a
// detached thread that requests `stop` on the first of them. Such a command ends with
// std::exit.
std::unique_ptr<kube::Client> ClientUntilSignal(const std::string& kubeconfig,
                                                const std::string& component, const char* command,
                                                std::stop_source stop);

// When a GPU counts as unhealthy, as flags of the subcommands that judge health.
struct HealthPolicyFlags {
  std::vector<uint64_t> ignore_xids;  // added to the default ignored XIDs
  bool replace_default_ignored_xids = false;
  std::string xid_actions;  // "109=RestartApp,..." (checked when parsed)
  // Where the recovery evidence is (recovery_evidence.h).
  agent::NodeRecoveryEvidenceOptions evidence;

  agent::HealthPolicy Policy() const;
};
void AddHealthPolicyFlags(CLI::App& command, HealthPolicyFlags& flags);

// The node this agent runs on, from --node-name or $NODE_NAME.
void AddNodeNameFlag(CLI::App& command, std::string& node_name, const std::string& purpose);

}  // namespace gpuop::cmd

#endif  // GPUOP_CMD_GPUOP_AGENT_ACCELERATORS_H_
