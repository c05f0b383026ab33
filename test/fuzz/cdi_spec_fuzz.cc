// A CDI spec file as gpuop-container-runtime reads it from /etc/cdi or /var/run/cdi: parsed, and
// when it parses, every device applied to a container's config.json.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/cdi/inject/cdi_spec.h"
#include "agent/cdi/inject/oci_edits.h"

namespace inject = gpuop::agent::cdi::inject;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const inject::StatusOr<inject::Spec> spec = inject::ParseSpecJson(text, "/etc/cdi/fuzz.json");
  if (!spec.ok()) return 0;
  std::vector<inject::EditsSource> sources = {
      {.device = "spec", .file = spec->file, .edits = &spec->edits}};
  for (const inject::Device& device : spec->devices) {
    sources.push_back({.device = device.name, .file = spec->file, .edits = &device.edits});
  }
  nlohmann::ordered_json config = nlohmann::ordered_json::parse(
      R"({"process": {"user": {"uid": 1000, "gid": 1000}, "env": ["PATH=/bin"],
          "capabilities": {"effective": ["CAP_SYS_ADMIN"]}},
          "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"}],
          "linux": {"resources": {"devices": [{"allow": false, "access": "rwm"}]}}})");
  const auto host = [](const std::string&) {
    return inject::StatusOr<inject::HostDevice>(inject::HostDevice{.type = "c", .major = 1});
  };
  const inject::Status applied = inject::ApplyEdits(config, sources, host);
  // What was applied serializes without throwing.
  if (applied.ok())
    (void)config.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  return 0;
}
