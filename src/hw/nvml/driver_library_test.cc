#include "hw/nvml/driver_library.h"

#include <filesystem>
#include <fstream>

#include <dlfcn.h>
#include <gtest/gtest.h>

#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::hw {
namespace {

namespace fs = std::filesystem;

void Touch(const fs::path& path) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << "ELF";
}

void Link(const std::string& target, const fs::path& link) {
  fs::create_directories(link.parent_path());
  fs::create_symlink(target, link);
}

class DriverLibraryTest : public ::testing::Test {
 protected:
  fakes::TempDir tmp_;
  const fs::path driver_ = tmp_.path() / "run/nvidia/driver";
  const fs::path host_ = tmp_.path() / "host";
  DriverLibrarySearch Search() const { return {.roots = {driver_.string(), host_.string()}}; }
};

TEST_F(DriverLibraryTest, TheSonameWhenNoRootHasIt) {
  fs::create_directories(driver_);
  fs::create_directories(host_ / "usr/lib64");
  EXPECT_EQ(ResolveDriverLibrary(kNvmlSoname, Search()), "libnvidia-ml.so.1");
  EXPECT_EQ(ResolveDriverLibrary(kNvmlSoname, {}), "libnvidia-ml.so.1");
}

TEST_F(DriverLibraryTest, TheDriverContainerFirstThenTheHost) {
  Touch(host_ / "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.570.86.15");
  Link("libnvidia-ml.so.570.86.15", host_ / "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1");
  EXPECT_EQ(ResolveDriverLibrary(kNvmlSoname, Search()),
            (host_ / "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.570.86.15").string());

  Touch(driver_ / "usr/lib64/libnvidia-ml.so.580.65.06");
  Link("libnvidia-ml.so.580.65.06", driver_ / "usr/lib64/libnvidia-ml.so.1");
  EXPECT_EQ(ResolveDriverLibrary(kNvmlSoname, Search()),
            (driver_ / "usr/lib64/libnvidia-ml.so.580.65.06").string());
}

TEST_F(DriverLibraryTest, AbsoluteLinksStayInsideTheRoot) {
  // RHEL-style: lib64 -> /usr/lib64, and an absolute link to the versioned file. Followed by this
  // process's own file system, both would point at its own /usr/lib64.
  Touch(host_ / "usr/lib64/libcuda.so.570.86.15");
  Link("/usr/lib64/libcuda.so.570.86.15", host_ / "usr/lib64/libcuda.so.1");
  Link("/usr/lib64", host_ / "lib64");
  DriverLibrarySearch search{.roots = {host_.string()}, .library_dirs = {"lib64"}};
  EXPECT_EQ(ResolveDriverLibrary(kCudaSoname, search),
            (host_ / "usr/lib64/libcuda.so.570.86.15").string());
}

TEST_F(DriverLibraryTest, DotDotStopsAtTheRoot) {
  Touch(host_ / "usr/lib/libnvidia-ml.so.1");
  EXPECT_EQ(ResolveInRoot(host_.string(), "../../../usr/lib/libnvidia-ml.so.1"),
            (host_ / "usr/lib/libnvidia-ml.so.1").string());
  Link("../../../../../../usr/lib/libnvidia-ml.so.1", host_ / "usr/lib64/libnvidia-ml.so.1");
  EXPECT_EQ(ResolveInRoot(host_.string(), "usr/lib64/libnvidia-ml.so.1"),
            (host_ / "usr/lib/libnvidia-ml.so.1").string());
}

TEST_F(DriverLibraryTest, BrokenCandidatesAreSkipped) {
  // A dangling link, a loop, a directory by the library's name: none is a library.
  Link("libnvidia-ml.so.999", host_ / "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1");
  Link("libnvidia-ml.so.1", host_ / "usr/lib64/libnvidia-ml.so.1");  // itself
  fs::create_directories(host_ / "usr/lib/libnvidia-ml.so.1");
  Touch(host_ / "lib/libnvidia-ml.so.1");
  EXPECT_EQ(ResolveDriverLibrary(kNvmlSoname, {.roots = {"", host_.string()}}),
            (host_ / "lib/libnvidia-ml.so.1").string());
  EXPECT_EQ(ResolveInRoot(host_.string(), "usr/lib64/libnvidia-ml.so.1"), "");
  EXPECT_EQ(ResolveInRoot(host_.string(), "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"), "");
}

TEST_F(DriverLibraryTest, TheRealRootWorksToo) {
  Touch(host_ / "usr/lib/libnvidia-ml.so.1");
  const std::string relative_to_slash = (host_ / "usr/lib/libnvidia-ml.so.1").string();
  EXPECT_EQ(ResolveInRoot("/", relative_to_slash), relative_to_slash);
  EXPECT_EQ(ResolveInRoot("/", "/nonexistent/libnvidia-ml.so.1"), "");
}

TEST_F(DriverLibraryTest, CompanionsBesideTheLibraryAreLoadedFirst) {
  // A real shared object under the companions' names (its own soname is libnvidia-ml.so.1).
  const fs::path dir = host_ / "usr/lib64";
  fs::create_directories(dir);
  fs::copy_file(GPUOP_FAKE_NVML_LIBRARY, dir / "libnvidia-ptxjitcompiler.so.1");
  Touch(dir / "libcuda.so.570.86.15");
  const std::string cuda = (dir / "libcuda.so.570.86.15").string();
  std::vector<std::string> companions(std::begin(kCudaCompanions), std::end(kCudaCompanions));
  EXPECT_EQ(PreloadCompanions(cuda, companions),
            std::vector<std::string>{(dir / "libnvidia-ptxjitcompiler.so.1").string()});
  // The loader now finds it by its soname without searching.
  EXPECT_NE(dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD), nullptr);

  // A companion that is not a library is skipped, and so is everything for a bare soname.
  Touch(dir / "libnvidia-gpucomp.so.570.86.15");
  EXPECT_EQ(PreloadCompanions(cuda, {"libnvidia-gpucomp.so.*"}), std::vector<std::string>{});
  EXPECT_TRUE(PreloadCompanions("libcuda.so.1", companions).empty());
  EXPECT_TRUE(
      PreloadCompanions((dir / "libcuda.so.1").string(), {"libnvidia-gpucomp.so.*"}).empty());
}

}  // namespace
}  // namespace gpuop::hw
