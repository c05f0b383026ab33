#include "agent/cdi/driver_watch.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "agent/cdi/fake_driver_root.h"
#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::agent::cdi {
namespace {

namespace fs = std::filesystem;

class DriverFingerprintTest : public ::testing::Test {
 protected:
  std::string Fingerprint() const {
    return DriverFingerprint({.sysroot = root_.string()}, driver_, "/dev");
  }
  fakes::TempDir root_;
  DriverFilesOptions driver_{.driver_root = "/run/nvidia/driver"};
};

TEST_F(DriverFingerprintTest, StableWhileNothingChanges) {
  testing::InstallDriverContainer(root_.path(), "/run/nvidia/driver");
  EXPECT_EQ(Fingerprint(), Fingerprint());
}

// Each of these must regenerate the spec.
TEST_F(DriverFingerprintTest, ChangesWithTheDriverRootItsLibrariesSocketsAndDevices) {
  const std::string empty = Fingerprint();
  testing::InstallDriverContainer(root_.path(), "/run/nvidia/driver");
  const std::string installed = Fingerprint();
  EXPECT_NE(installed, empty);

  const fs::path driver = root_.path() / "run/nvidia/driver";
  testing::WriteFile(driver / "usr/lib/x86_64-linux-gnu/libnvidia-nvvm.so.570.86.15", "");
  const std::string library = Fingerprint();
  EXPECT_NE(library, installed);

  fs::remove(driver / "run/nvidia-fabricmanager/socket");
  const std::string socket = Fingerprint();
  EXPECT_NE(socket, library);

  testing::WriteFile(root_.path() / "dev/nvidia-uvm", "");
  const std::string device = Fingerprint();
  EXPECT_NE(device, socket);

  // A driver container that restarts publishes a new tree at the same path.
  fs::rename(driver, root_.path() / "old-driver");
  testing::InstallDriverContainer(root_.path(), "/run/nvidia/driver");
  EXPECT_NE(Fingerprint(), device);
}

}  // namespace
}  // namespace gpuop::agent::cdi
