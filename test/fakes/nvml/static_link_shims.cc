// Two definitions private to the fake library (hidden: never exported, nothing outside the
// library binds to them) that let it link yaml-cpp and absl statically and so need nothing but
// glibc (../CMakeLists.txt). Debian's libyaml-cpp.a and libabsl_*.a are compiled as
// position-dependent (PIE) code; a shared object can carry most of it, but not a PC-relative
// reference to another library's data symbol, nor a local-exec thread-local variable. Each
// definition here stands in for one such thing, so the linker never needs it. The library links
// with --no-undefined, so a change in either archive that needs more fails at build time.

#include <cstdint>
#include <limits>

#include "absl/strings/internal/cordz_functions.h"
#include "absl/strings/internal/cordz_info.h"
#include "absl/synchronization/mutex.h"

// glibc's __libc_single_threaded, which yaml-cpp's inlined libstdc++ reference counting reads
// PC-relatively. The flag only lets a process that never started a thread skip atomic
// instructions; a private copy that stays 0 ("maybe threaded") keeps every count atomic, which
// is always correct.
extern "C" {
__attribute__((visibility("hidden"))) char __libc_single_threaded = 0;
}

// absl::Status reaches absl::Cord, and Cord reaches its memory sampler, cordz: a countdown in a
// thread-local variable that absl reaches local-exec, and a registry of sampled Cords behind
// absl::Mutex, whose archive members keep a thread-local of their own. These definitions replace
// those members: no Cord made by this library is ever sampled (cordz is a profiling aid, and
// nothing here reads its samples), so the registry's entry points below are only ever asked
// about Cords that are not tracked, and do nothing, as absl's do for such Cords. Hidden by
// -fvisibility=hidden and the version script like the rest of the library.
namespace absl {
ABSL_NAMESPACE_BEGIN
namespace cord_internal {

ABSL_CONST_INIT thread_local int64_t cordz_next_sample = std::numeric_limits<int64_t>::max();

bool cordz_should_profile_slow() { return false; }

void CordzInfo::TrackCord(InlineData&, MethodIdentifier) {}
void CordzInfo::MaybeTrackCordImpl(InlineData&, const InlineData&, MethodIdentifier) {}
void CordzInfo::Untrack() {}
void CordzInfo::Lock(MethodIdentifier) {}
void CordzInfo::Unlock() {}

}  // namespace cord_internal

void Mutex::AssertHeld() const {}

ABSL_NAMESPACE_END
}  // namespace absl
