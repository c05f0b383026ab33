#include "operator/uninstall/uninstaller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuop::op::uninstall {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(UndoCommandTest, TheRuntimeComponentUnconfiguresWithItsOwnFlags) {
  EXPECT_THAT(UndoCommand({"gpuop-agent", "runtime", "configure", "--keep-running",
                           "--host-root=/host", "--nvidia-runtime", "--runtime=containerd"}),
              ElementsAre("gpuop-agent", "runtime", "unconfigure", "--host-root=/host",
                          "--nvidia-runtime", "--runtime=containerd"));
}

TEST(UndoCommandTest, TheCdiComponentRemovesWhatItWrote) {
  EXPECT_THAT(
      UndoCommand({"gpuop-agent", "cdi", "generate", "--watch", "--output-dir=/var/run/cdi",
                   "--driver-root=auto", "--host-root=/host", "--layout-file=/run/gpuop/mig-layout",
                   "--hook-install-dir=/var/lib/gpuop/bin"}),
      ElementsAre("gpuop-agent", "cdi", "remove", "--output-dir=/var/run/cdi", "--host-root=/host",
                  "--hook-install-dir=/var/lib/gpuop/bin"));
}

TEST(UndoCommandTest, ThePowerComponentGivesBackTheLimitsItLowered) {
  EXPECT_THAT(UndoCommand({"gpuop-agent", "power", "--host-root=/host", "--idle-after=600",
                           "--floor-percent=60"}),
              ElementsAre("gpuop-agent", "power", "--host-root=/host", "--idle-after=600",
                          "--floor-percent=60", "--restore"));
}

TEST(UndoCommandTest, OtherComponentsHaveNoUndo) {
  EXPECT_THAT(UndoCommand({"gpuop-agent", "device-plugin", "--host-root=/host"}), IsEmpty());
  EXPECT_THAT(UndoCommand({"nvidia-driver", "init"}), IsEmpty());
  EXPECT_THAT(UndoCommand({}), IsEmpty());
}

}  // namespace
}  // namespace gpuop::op::uninstall
