// Informer cost at fleet scale, in one process, with no network:
//   1. memory of 5,000 realistic GPU Nodes (about 40 labels, full status, 30 images, managed
//      fields) cached as full JSON objects versus as trimmed, interned kube::Node views;
//   2. watch event throughput: a stream of MODIFIED events for those Nodes split into lines,
//      decoded, trimmed and stored, the path every watch event takes.
// Usage: kube_informer_bench [--nodes N] [--events N]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <malloc.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "kube/informer/store.h"
#include "kube/types/node.h"
#include "kube/watch/watch.h"
#include "test/fakes/node_objects.h"

namespace gpuop {
namespace {

using kube::Json;

// Bytes the allocator has handed out and not had back.
size_t HeapInUse() {
  malloc_trim(0);
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

double MiB(size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

template <typename T>
size_t StoreCost(int nodes, const std::function<T(const Json&)>& make) {
  // Objects are generated one at a time so only what the store keeps is measured.
  const size_t before = HeapInUse();
  auto store = std::make_unique<kube::Store<T>>();
  for (int i = 0; i < nodes; ++i) {
    Json node = fakes::RealisticGpuNode(i);
    store->Upsert(kube::ObjectKey(node), std::make_shared<const T>(make(node)),
                  node["metadata"]["resourceVersion"]);
  }
  const size_t after = HeapInUse();
  store.reset();
  return after - before;
}

void Memory(int nodes) {
  const std::string sample = fakes::RealisticGpuNode(1).dump();
  std::printf("Node object: %zu bytes of JSON, %zu labels\n", sample.size(),
              fakes::RealisticGpuNode(1)["metadata"]["labels"].size());
  const size_t trimmed = StoreCost<kube::Node>(nodes, [](const Json& j) {
    auto node = kube::ParseNode(j);
    if (!node.ok()) std::abort();
    return *std::move(node);
  });
  const size_t full = StoreCost<Json>(nodes, [](const Json& j) { return j; });
  std::printf("\n%-34s %12s %14s\n", ("cache of " + std::to_string(nodes) + " Nodes").c_str(),
              "MiB", "bytes/Node");
  std::printf("%-34s %12.1f %14zu\n", "full objects (nlohmann::json)", MiB(full), full / nodes);
  std::printf("%-34s %12.1f %14zu\n", "trimmed kube::Node (interned)", MiB(trimmed),
              trimmed / nodes);
  std::printf("%-34s %12.1fx\n", "reduction", static_cast<double>(full) / trimmed);
}

void Throughput(int nodes, int events) {
  // A watch stream as the API server sends it: one JSON event per line.
  std::string stream;
  for (int i = 0; i < nodes; ++i) {
    Json node = fakes::RealisticGpuNode(i);
    node["metadata"]["resourceVersion"] = absl::StrCat(100000 + i);
    absl::StrAppend(&stream, Json{{"type", "MODIFIED"}, {"object", node}}.dump(), "\n");
  }
  kube::Store<kube::Node> store;
  kube::LineSplitter splitter;
  int done = 0;
  const absl::Time start = absl::Now();
  size_t bytes = 0;
  while (done < events) {
    // Chunks of 16 KiB, as a TLS stream delivers them.
    for (size_t off = 0; off < stream.size() && done < events; off += 16384) {
      const absl::string_view chunk = absl::string_view(stream).substr(off, 16384);
      bytes += chunk.size();
      splitter.Feed(chunk, [&](absl::string_view line) {
        auto event = kube::ParseWatchEvent(line, "bench");
        if (!event.ok()) std::abort();
        auto node = kube::ParseNode(event->object);
        if (!node.ok()) std::abort();
        std::string version = node->metadata.resource_version;
        store.Upsert(node->metadata.Key(), std::make_shared<const kube::Node>(*std::move(node)),
                     std::move(version));
        ++done;
        return true;
      });
    }
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  std::printf(
      "\nwatch decode+trim+store: %d events in %.2f s = %.0f events/s, %.1f MiB/s of JSON\n", done,
      seconds, done / seconds, MiB(bytes) / seconds);
}

}  // namespace
}  // namespace gpuop

int main(int argc, char** argv) {
  int nodes = 5000;
  int events = 50000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--nodes") == 0) nodes = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--events") == 0) events = std::atoi(argv[i + 1]);
  }
  gpuop::Memory(nodes);
  gpuop::Throughput(nodes, events);
  return 0;
}
