#ifndef GPUOP_AGENT_RUNTIME_CONTAINERD_TEST_UTIL_H_
#define GPUOP_AGENT_RUNTIME_CONTAINERD_TEST_UTIL_H_

// What the containerd drop-in tests share.

#include <string>
#include <string_view>

#include <toml++/toml.h>

#include "agent/runtime/runtime.h"

namespace gpuop::agent::runtime {

// A rendered drop-in, parsed (a parse error fails the test with an exception naming "drop-in").
inline toml::table Parse(const std::string& text) {
  return toml::parse(std::string_view(text), std::string_view("drop-in"));
}

// CDI and NVIDIA's handler, its binary where NVIDIA's toolkit container installs it.
inline Options RuntimeOptions() {
  Options options;
  options.add_nvidia_runtime = true;
  options.runtime_binary = "/usr/local/nvidia/toolkit/nvidia-container-runtime";
  return options;
}

}  // namespace gpuop::agent::runtime

#endif  // GPUOP_AGENT_RUNTIME_CONTAINERD_TEST_UTIL_H_
