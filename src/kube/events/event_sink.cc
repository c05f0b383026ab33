#include "kube/events/event_sink.h"

namespace gpuop::kube {

absl::Status ClientEventSink::Create(absl::string_view ns, const Json& event) {
  return client_.Create(resources::kEventsV1, ns, event).status();
}

absl::Status ClientEventSink::Patch(absl::string_view ns, absl::string_view name,
                                    const Json& patch) {
  return client_.Patch(resources::kEventsV1, ns, name, PatchType::kMergePatch, patch).status();
}

}  // namespace gpuop::kube
