#ifndef GPUOP_AGENT_CDI_GENERATOR_H_
#define GPUOP_AGENT_CDI_GENERATOR_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/cdi/spec.h"
#include "hw/model.h"

namespace gpuop::agent::cdi {

// A generated spec and what did not go into it.
struct GeneratedSpec {
  // Valid (ValidateSpec passes) and versioned with MinimumCdiVersion.
  Spec spec;
  // What the environment lacked, one line each, naming the device and the file: a device left
  // out because its device node or MIG capability is missing, a control node CUDA needs that is
  // absent, no driver libraries found. The caller logs them and counts them in a metric; they
  // are normal while a driver is still coming up, and a later regeneration clears them.
  std::vector<std::string> warnings;
};

// Turns one vendor's inventory into the CDI spec that lets a runtime inject those devices.
// Implementations read the host's files (device nodes, driver files, procfs) on every call and
// keep no state between calls, so Generate is level-based and safe to call concurrently.
class CdiGenerator {
 public:
  virtual ~CdiGenerator() = default;

  // InvalidArgument when the options or the inventory are unusable (a bad vendor or class name,
  // a relative root, an inventory of another vendor, duplicate GPU names); FailedPrecondition,
  // listing the warnings, when no device at all could be described; other errors name the file
  // that could not be read.
  [[nodiscard]] virtual absl::StatusOr<GeneratedSpec> Generate(
      const hw::Inventory& inventory) const = 0;
};

// Building blocks the generators share.

// The "all" device: every device's edits, in order, each distinct device node, mount, hook, env
// entry and gid once.
Device AllDevice(const std::vector<Device>& devices, const std::string& name = "all");

// Sets spec.cdi_version to MinimumCdiVersion(spec) and checks the result with ValidateSpec.
[[nodiscard]] absl::Status FinishSpec(Spec& spec);

}  // namespace gpuop::agent::cdi

#endif  // GPUOP_AGENT_CDI_GENERATOR_H_
