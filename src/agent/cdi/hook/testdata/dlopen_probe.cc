// What a CUDA application does first, for gpuop-cdi-hook's end-to-end test: dlopen the driver's
// libraries by the names applications use (SONAMEs and libcuda.so). Prints one line per name,
// "<name> loaded" or "<name> failed: <dlerror>", and exits 1 when any failed.
#include <cstdio>
#include <initializer_list>

#include <dlfcn.h>

int main() {
  int failed = 0;
  for (const char* name : {"libcuda.so.1", "libnvidia-ml.so.1", "libcuda.so"}) {
    if (dlopen(name, RTLD_NOW | RTLD_LOCAL) != nullptr) {
      std::printf("%s loaded\n", name);
    } else {
      std::printf("%s failed: %s\n", name, dlerror());
      failed = 1;
    }
  }
  return failed;
}
