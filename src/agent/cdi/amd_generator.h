#ifndef GPUOP_AGENT_CDI_AMD_GENERATOR_H_
#define GPUOP_AGENT_CDI_AMD_GENERATOR_H_

#include <string>

#include "agent/cdi/generator.h"
#include "agent/cdi/host_files.h"

namespace gpuop::agent::cdi {

inline constexpr char kAmdSpecFileName[] = "gpuop-amd.json";

struct AmdCdiOptions {
  std::string vendor = "amd.com";
  std::string device_class = "gpu";
  // The host's device directory; must be the dev_root the AMD backend reported the inventory's
  // device nodes under (hw::AmdOptions::dev_root). Containers get the nodes under /dev.
  std::string dev_root = "/dev";
  bool all_device = true;
  HostFiles files;
};

// Builds the AMD spec from the AMD backend's inventory (hw::AmdAccelerator), with no ROCm
// user-space files (containers bring their own ROCm):
//   "<index>" and "<pci address>" ("0", "0000:19:00.0") per GPU: its Gpu::device_nodes other
//       than kfd (/dev/dri/card<N>, /dev/dri/renderD<M>);
//   "all": every GPU's nodes;
//   spec-wide: /dev/kfd, which every AMD compute container needs.
// A GPU with a missing node, or none besides kfd, is left out with a warning; a missing /dev/kfd
// is a warning. A node path outside dev_root is InvalidArgument (it cannot be mapped into the
// container's /dev).
class AmdCdiGenerator final : public CdiGenerator {
 public:
  explicit AmdCdiGenerator(AmdCdiOptions options);

  [[nodiscard]] absl::StatusOr<GeneratedSpec> Generate(
      const hw::Inventory& inventory) const override;

 private:
  const AmdCdiOptions options_;
};

}  // namespace gpuop::agent::cdi

#endif  // GPUOP_AGENT_CDI_AMD_GENERATOR_H_
