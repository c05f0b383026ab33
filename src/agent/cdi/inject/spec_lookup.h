#ifndef GPUOP_AGENT_CDI_INJECT_SPEC_LOOKUP_H_
#define GPUOP_AGENT_CDI_INJECT_SPEC_LOOKUP_H_

#include <memory>
#include <string>
#include <vector>

#include "agent/cdi/inject/cdi_spec.h"
#include "agent/cdi/inject/device_names.h"
#include "agent/cdi/inject/status.h"

// Finds requested CDI devices in the spec directories.
namespace gpuop::agent::cdi::inject {

// CDI's default directories, static then dynamic.
std::vector<std::string> DefaultSpecDirs();

// A requested device and the spec that defines it.
struct ResolvedDevice {
  QualifiedName name;
  std::shared_ptr<const Spec> spec;
  const Device* device = nullptr;  // points into *spec
};

// Resolves `requests` against the spec files in `dirs`, in request order. As CDI's reference
// library does, each directory's entries are read in name order, subdirectories are not entered,
// only names ending in ".json" or ".yaml" are considered and a device defined in several
// directories is taken from the last of them; the same device defined twice in that directory is
// an error naming both files. A missing directory is skipped.
//
// Only specs of a requested kind matter: a JSON spec of another kind is skipped without checking
// it further, a JSON spec of a requested kind that ParseSpecJson rejects is an error, and a YAML
// spec of a requested kind is an error saying this wrapper reads JSON only. Files whose kind
// cannot be told (unreadable, not JSON) do not stop the lookup, as in the reference library, but
// a device that no spec defines is an error naming it, the directories searched and those files'
// problems.
StatusOr<std::vector<ResolvedDevice>> ResolveDevices(const std::vector<std::string>& dirs,
                                                     const std::vector<QualifiedName>& requests);

}  // namespace gpuop::agent::cdi::inject

#endif  // GPUOP_AGENT_CDI_INJECT_SPEC_LOOKUP_H_
