#ifndef GPUOP_AGENT_CDI_FAKE_DRIVER_ROOT_H_
#define GPUOP_AGENT_CDI_FAKE_DRIVER_ROOT_H_

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "agent/cdi/host_files.h"
#include "hw/model.h"

// Test fixtures for the CDI generators: a fake host tree (driver files, device node stand-ins,
// MIG capability files) under a temp directory used as HostFiles::sysroot, and inventories to
// match. The builders abort the test binary when the file system refuses a write.
namespace gpuop::agent::cdi::testing {

inline constexpr char kDriverVersion[] = "570.86.15";

// Writes `content` at `path`, creating the parent directories.
void WriteFile(const std::filesystem::path& path, const std::string& content = "");
// Creates the symlink `link` -> `target` (target written as given), creating parents.
void Symlink(const std::string& target, const std::filesystem::path& link);

// Device nodes made of regular files, with the numbers a real node would have. stat() reports
// those numbers for a stand-in that exists and defers to StatDeviceNode for everything else, so
// deleting a stand-in makes the node missing.
class FakeDevices {
 public:
  explicit FakeDevices(std::filesystem::path sysroot) : sysroot_(std::move(sysroot)) {}

  // Creates the stand-in for the host's character device `host_path` ("/dev/nvidia0").
  void AddChar(const std::string& host_path, int64_t major, int64_t minor);
  DeviceStatFn stat() const;
  HostFiles files() const { return HostFiles{.sysroot = sysroot_.string(), .stat = stat()}; }

 private:
  std::filesystem::path sysroot_;
  std::map<std::string, DeviceNumbers> numbers_;  // by the path this process opens
};

// Installs driver `version` under <sysroot>/<driver_root>: the compute libraries in
// usr/lib/x86_64-linux-gnu with their .so.1 (and libcuda.so) symlinks, a stray library of
// another version, lib64 -> usr/lib64 (empty), the binaries in usr/bin and the firmware.
void InstallNvidiaDriver(const std::filesystem::path& sysroot, const std::string& driver_root,
                         const std::string& version = kDriverVersion);

// A driver container's root at <sysroot>/<driver_root> as gpuop's simulated driver publishes it
// (and a real one does, minus the links): libnvidia-ml.so.<version> and libcuda.so.<version>,
// copies of the project's fake NVML and CUDA libraries (real ELF, DT_SONAME libnvidia-ml.so.1 and
// libcuda.so.1), with no symlinks beside them; usr/bin/nvidia-smi; var/run -> ../run with the
// persistence daemon's and the fabric manager's sockets (real unix sockets) in run/ and the MPS
// pipe directory tmp/nvidia-mps.
void InstallDriverContainer(const std::filesystem::path& sysroot, const std::string& driver_root,
                            const std::string& version = kDriverVersion);

// /dev/nvidiactl (195:255), /dev/nvidia-uvm (509:0), /dev/nvidia-uvm-tools (509:1),
// /dev/nvidia-modeset (195:254) and /dev/nvidia<minor> (195:minor) under `dev_root`.
void AddNvidiaDeviceNodes(FakeDevices& devices, const std::string& dev_root,
                          const std::vector<unsigned int>& gpu_minors);

// The access files of one MIG device (GI and CI) under <sysroot>/proc and its
// /dev/nvidia-caps nodes (511:N) under `dev_root`.
void AddMigCaps(const std::filesystem::path& sysroot, FakeDevices& devices,
                const std::string& dev_root, unsigned int gpu_minor, unsigned int gi,
                unsigned int ci, unsigned int gi_cap, unsigned int ci_cap);

// `count` H100s, indexes 0.., minor numbers equal to indexes, UUIDs GPU-<n>0000000-....
hw::Inventory NvidiaInventory(int count);

// Two A100s: GPU 0 with MIG devices (gi 1, ci 0) and (gi 2, ci 0), GPU 1 without MIG.
hw::Inventory MigInventory();

// Expects `actual` to equal the spec in testdata/<name>, a hand-written JSON file compared after
// parsing (so its formatting is free); on a difference prints both.
void ExpectSpec(const Spec& actual, const std::string& name);

// What a CDI consumer requires of a spec file, checked on the JSON text on its own terms (the
// CDI specification's tables as interfaces.md section 4 gives them), not with ValidateSpec:
// cdiVersion "[v]N.N.N"; kind "<vendor>/<class>" with the name rules; at least one device, each
// with a valid name; containerEdits objects, never arrays; deviceNodes with an absolute path;
// mounts with hostPath and containerPath; hooks with a known hookName and an absolute path;
// no keys outside the specification. Returns the problems found.
std::vector<std::string> CdiDocumentProblems(const std::string& json_text);

// Expects `actual` to equal testdata/<name>. With GPUOP_UPDATE_GOLDEN=1 in the environment it
// rewrites the file first (review the diff before committing it).
void ExpectGolden(const std::string& actual, const std::string& name);

}  // namespace gpuop::agent::cdi::testing

#endif  // GPUOP_AGENT_CDI_FAKE_DRIVER_ROOT_H_
