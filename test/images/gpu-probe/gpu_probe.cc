// gpu-probe: the workload of the image localhost/gpu-probe:1, a stand-in for a user's GPU pod.
//
// It reports what a container that asked for a GPU actually got, as ONE JSON object on stdout:
//   {"dev_nodes":["/dev/nvidia0","/dev/nvidiactl",...],
//    "nvml":{"loaded":true,"path":"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1","count":2,
//            "uuids":["GPU-...","GPU-..."],"mig_uuids":["MIG-..."],"error":null},
//    "cuda":{"loaded":true,"path":"...","count":2,"error":null},
//    "mps":{"pipe_dir":"/mps/nvidia.com/gpu/pipe","control":true}}
// "mps" is null unless the container was given CUDA_MPS_PIPE_DIRECTORY (a device shared with
// MPS); "control" says whether the MPS control daemon's socket is in that directory.
// "mig_uuids" lists the MIG devices NVML shows the container on its GPUs (GPUs without MIG answer
// NOT_SUPPORTED there, which is no error).
// "error" is null when every call succeeded, else a string naming the call that failed and its
// return code; "path" is null and "count" 0 when the library did not load. The libraries are
// loaded by SONAME through the normal dynamic loader, exactly as CUDA applications do, so the
// probe finds what the container runtime (a CDI spec) mounted into the standard library search
// path and nothing else. The exit status is 0 whatever failed: the JSON says what.
//
//   gpu-probe            print the report and exit
//   gpu-probe --sleep    print the report, then wait for SIGTERM/SIGINT (exit 0), so a pod stays
//                        Running and a test reads the report from its log
//   gpu-probe --sleep --hold
//                        the same, with NVML left initialised while it waits, as a monitoring
//                        agent keeps it: the process holds its GPUs' device nodes open, which
//                        makes the driver refuse a reset of those GPUs
//
// Linked with -static-libstdc++ -static-libgcc: it needs only glibc in the image.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

// The few NVML and CUDA driver API entry points the probe calls (NVML ABI: nvmlReturn_t and
// CUresult are int, 0 is success; nvmlDevice_t is an opaque pointer).
using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque*;
using NvmlInitFn = NvmlReturn (*)();
using NvmlShutdownFn = NvmlReturn (*)();
using NvmlGetCountFn = NvmlReturn (*)(unsigned int*);
using NvmlGetHandleFn = NvmlReturn (*)(unsigned int, NvmlDevice*);
using NvmlGetUuidFn = NvmlReturn (*)(NvmlDevice, char*, unsigned int);
using NvmlGetMaxMigFn = NvmlReturn (*)(NvmlDevice, unsigned int*);
using NvmlGetMigHandleFn = NvmlReturn (*)(NvmlDevice, unsigned int, NvmlDevice*);
using NvmlErrorStringFn = const char* (*)(NvmlReturn);
constexpr unsigned int kNvmlUuidBufferSize = 96;  // NVML_DEVICE_UUID_V2_BUFFER_SIZE

using CuResult = int;
using CuInitFn = CuResult (*)(unsigned int);
using CuDeviceGetCountFn = CuResult (*)(int*);
using CuGetErrorNameFn = CuResult (*)(CuResult, const char**);

std::string JsonString(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x", static_cast<unsigned char>(c));
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string JsonStringOrNull(const std::string& text) {
  return text.empty() ? "null" : JsonString(text);
}

std::string JsonArray(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ",";
    out += JsonString(items[i]);
  }
  return out + "]";
}

// The /dev/nvidia* entries, and the entries of /dev/nvidia-caps (MIG capabilities), sorted.
std::vector<std::string> DeviceNodes() {
  std::vector<std::string> nodes;
  auto list = [&nodes](const std::string& dir, std::string_view prefix) {
    DIR* stream = opendir(dir.c_str());
    if (stream == nullptr) return;
    while (const dirent* entry = readdir(stream)) {
      const std::string_view name = entry->d_name;
      if (name == "." || name == "..") continue;
      if (name.substr(0, prefix.size()) == prefix) nodes.push_back(dir + "/" + std::string(name));
    }
    closedir(stream);
  };
  list("/dev", "nvidia");
  list("/dev/nvidia-caps", "");
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

// A library loaded by SONAME, and the file the loader took it from.
struct Library {
  void* handle = nullptr;
  std::string path;
  std::string error;
};

Library Load(const char* soname) {
  Library lib;
  lib.handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (lib.handle == nullptr) {
    const char* error = dlerror();
    lib.error = std::string("dlopen ") + soname + ": " + (error != nullptr ? error : "failed");
    return lib;
  }
  link_map* map = nullptr;
  if (dlinfo(lib.handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr) {
    lib.path = map->l_name;
  }
  return lib;
}

template <typename Fn>
Fn Symbol(const Library& lib, const char* name, std::string& error) {
  auto fn = reinterpret_cast<Fn>(dlsym(lib.handle, name));
  if (fn == nullptr && error.empty()) error = std::string("dlsym ") + name + ": not exported";
  return fn;
}

std::string LibraryFields(const Library& lib) {
  return std::string("\"loaded\":") + (lib.handle != nullptr ? "true" : "false") +
         ",\"path\":" + JsonStringOrNull(lib.path);
}

std::string ProbeNvml(bool hold) {
  Library lib = Load("libnvidia-ml.so.1");
  unsigned int count = 0;
  std::vector<std::string> uuids;
  std::vector<std::string> mig_uuids;
  std::string error = lib.error;
  if (lib.handle != nullptr) {
    auto init = Symbol<NvmlInitFn>(lib, "nvmlInit_v2", error);
    auto shutdown = Symbol<NvmlShutdownFn>(lib, "nvmlShutdown", error);
    auto get_count = Symbol<NvmlGetCountFn>(lib, "nvmlDeviceGetCount_v2", error);
    auto get_handle = Symbol<NvmlGetHandleFn>(lib, "nvmlDeviceGetHandleByIndex_v2", error);
    auto get_uuid = Symbol<NvmlGetUuidFn>(lib, "nvmlDeviceGetUUID", error);
    auto error_string = reinterpret_cast<NvmlErrorStringFn>(dlsym(lib.handle, "nvmlErrorString"));
    auto max_mig =
        reinterpret_cast<NvmlGetMaxMigFn>(dlsym(lib.handle, "nvmlDeviceGetMaxMigDeviceCount"));
    auto mig_handle = reinterpret_cast<NvmlGetMigHandleFn>(
        dlsym(lib.handle, "nvmlDeviceGetMigDeviceHandleByIndex"));
    auto failed = [&](const char* call, NvmlReturn code) {
      const char* text = error_string != nullptr ? error_string(code) : nullptr;
      error = std::string(call) + ": " + std::to_string(code) +
              (text != nullptr ? std::string(" (") + text + ")" : "");
    };
    if (error.empty()) {
      if (NvmlReturn rc = init(); rc != 0) {
        failed("nvmlInit_v2", rc);
      } else {
        if (rc = get_count(&count); rc != 0) {
          failed("nvmlDeviceGetCount_v2", rc);
          count = 0;
        }
        for (unsigned int i = 0; i < count && error.empty(); ++i) {
          NvmlDevice device = nullptr;
          char uuid[kNvmlUuidBufferSize] = {};
          if (rc = get_handle(i, &device); rc != 0) {
            failed("nvmlDeviceGetHandleByIndex_v2", rc);
          } else if (rc = get_uuid(device, uuid, sizeof(uuid)); rc != 0) {
            failed("nvmlDeviceGetUUID", rc);
          } else {
            uuids.emplace_back(uuid, strnlen(uuid, sizeof(uuid)));
            unsigned int slots = 0;
            if (max_mig == nullptr || mig_handle == nullptr || max_mig(device, &slots) != 0) {
              continue;
            }
            for (unsigned int m = 0; m < slots; ++m) {
              NvmlDevice mig = nullptr;
              char mig_uuid[kNvmlUuidBufferSize] = {};
              if (mig_handle(device, m, &mig) == 0 &&
                  get_uuid(mig, mig_uuid, sizeof(mig_uuid)) == 0) {
                mig_uuids.emplace_back(mig_uuid, strnlen(mig_uuid, sizeof(mig_uuid)));
              }
            }
          }
        }
        if (!hold) shutdown();
      }
    }
  }
  return "{" + LibraryFields(lib) + ",\"count\":" + std::to_string(count) +
         ",\"uuids\":" + JsonArray(uuids) + ",\"mig_uuids\":" + JsonArray(mig_uuids) +
         ",\"error\":" + JsonStringOrNull(error) + "}";
}

std::string ProbeMps() {
  const char* dir = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  if (dir == nullptr) return "null";
  struct stat st;
  const bool control = stat((std::string(dir) + "/control").c_str(), &st) == 0;
  return "{\"pipe_dir\":" + JsonString(dir) + ",\"control\":" + (control ? "true" : "false") + "}";
}

std::string ProbeCuda() {
  Library lib = Load("libcuda.so.1");
  int count = 0;
  std::string error = lib.error;
  if (lib.handle != nullptr) {
    auto init = Symbol<CuInitFn>(lib, "cuInit", error);
    auto get_count = Symbol<CuDeviceGetCountFn>(lib, "cuDeviceGetCount", error);
    auto error_name = reinterpret_cast<CuGetErrorNameFn>(dlsym(lib.handle, "cuGetErrorName"));
    auto failed = [&](const char* call, CuResult code) {
      const char* name = nullptr;
      if (error_name != nullptr && error_name(code, &name) != 0) name = nullptr;
      error = std::string(call) + ": " + std::to_string(code) +
              (name != nullptr ? std::string(" (") + name + ")" : "");
    };
    if (error.empty()) {
      if (CuResult rc = init(0); rc != 0) {
        failed("cuInit", rc);
      } else if (rc = get_count(&count); rc != 0) {
        failed("cuDeviceGetCount", rc);
        count = 0;
      }
    }
  }
  return "{" + LibraryFields(lib) + ",\"count\":" + std::to_string(count) +
         ",\"error\":" + JsonStringOrNull(error) + "}";
}

void Stop(int /*signal*/) { _exit(0); }

}  // namespace

int main(int argc, char** argv) {
  bool sleep = false;
  bool hold = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--sleep") == 0) {
      sleep = true;
    } else if (std::strcmp(argv[i], "--hold") == 0) {
      hold = true;
    } else {
      std::fprintf(stderr, "usage: %s [--sleep [--hold]]\n", argv[0]);
      return 2;
    }
  }
  // Handlers first: as PID 1 of a container, SIGTERM would otherwise be ignored until the kill.
  signal(SIGTERM, Stop);
  signal(SIGINT, Stop);
  if (hold && !sleep) {
    std::fprintf(stderr, "%s: --hold needs --sleep\n", argv[0]);
    return 2;
  }

  const std::string report = "{\"dev_nodes\":" + JsonArray(DeviceNodes()) +
                             ",\"nvml\":" + ProbeNvml(hold) + ",\"cuda\":" + ProbeCuda() +
                             ",\"mps\":" + ProbeMps() + "}\n";
  std::fputs(report.c_str(), stdout);
  std::fflush(stdout);
  if (sleep) {
    for (;;) pause();
  }
  return 0;
}
