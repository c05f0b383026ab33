#ifndef GPUOP_KUBE_EVENTS_EVENT_SINK_H_
#define GPUOP_KUBE_EVENTS_EVENT_SINK_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "kube/client/client.h"

namespace gpuop::kube {

// Where an EventRecorder writes events.k8s.io/v1 Events. Errors follow kube/client/api_error.h:
// Unavailable and the like are transient, NotFound means the Event (or its namespace) is gone.
//
// Implementations are thread-safe.
class EventSink {
 public:
  virtual ~EventSink() = default;

  // Creates `event` (named by its metadata) in `ns`; AlreadyExists when the name is taken.
  [[nodiscard]] virtual absl::Status Create(absl::string_view ns, const Json& event) = 0;

  // Applies the JSON merge patch `patch` to the Event ns/name.
  [[nodiscard]] virtual absl::Status Patch(absl::string_view ns, absl::string_view name,
                                           const Json& patch) = 0;
};

// An EventSink on the API server.
//
// Thread-safe. `client` must outlive the sink.
class ClientEventSink final : public EventSink {
 public:
  explicit ClientEventSink(Client& client) : client_(client) {}

  absl::Status Create(absl::string_view ns, const Json& event) override;
  absl::Status Patch(absl::string_view ns, absl::string_view name, const Json& patch) override;

 private:
  Client& client_;
};

}  // namespace gpuop::kube

#endif  // GPUOP_KUBE_EVENTS_EVENT_SINK_H_
