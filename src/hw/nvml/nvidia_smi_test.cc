// NvidiaSmi runs `nvidia-smi -r -i <ids>` and plain `nvidia-smi`, and reports what a refusal
// printed. The program
// here is a shell script standing in for nvidia-smi; the simulated nvidia-smi's own reset is
// tested with the fake driver (test/fakes/driver).
#include "hw/nvml/nvidia_smi.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "common/files.h"

namespace gpuop::hw {
namespace {

using ::testing::HasSubstr;

class NvidiaSmiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpuop-gpu-reset-test-" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A stand-in nvidia-smi that records its arguments, prints `say` and exits with `code`.
  std::string Program(int code, const std::string& say) {
    const std::filesystem::path path = dir_ / "nvidia-smi";
    std::ofstream(path) << "#!/bin/sh\necho \"$@\" > " << (dir_ / "args").string() << "\necho '"
                        << say << "'\nexit " << code << "\n";
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    return path.string();
  }

  std::string Args() {
    absl::StatusOr<std::string> args = common::ReadFile(dir_ / "args");
    return args.ok() ? *args : "";
  }

  std::filesystem::path dir_;
};

TEST_F(NvidiaSmiTest, ResetsEveryGpuInOneCall) {
  const NvidiaSmi reset{.program = Program(0, "GPU 00000000:18:00.0 was successfully reset.")};
  EXPECT_TRUE(reset.Reset({"0000:18:00.0", "0000:2a:00.0"}).ok());
  EXPECT_EQ(Args(), "-r -i 0000:18:00.0,0000:2a:00.0\n");
}

TEST_F(NvidiaSmiTest, ARefusalSaysWhatNvidiaSmiPrinted) {
  const NvidiaSmi reset{.program = Program(255, "GPU 00000000:18:00.0 is in use")};
  const absl::Status status = reset.Reset({"0000:18:00.0"});
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("nvidia-smi -r -i 0000:18:00.0: exited with code 255: GPU "
                        "00000000:18:00.0 is in use"));
}

// Plain nvidia-smi is what has the driver create the MIG instances' device nodes; a failure
// says what it printed.
TEST_F(NvidiaSmiTest, CreatingDeviceNodesRunsPlainNvidiaSmi) {
  const NvidiaSmi smi{.program = Program(0, "GPU 0: NVIDIA A100-SXM4-40GB")};
  EXPECT_TRUE(smi.CreateDeviceNodes().ok());
  EXPECT_EQ(Args(), "\n");
  const NvidiaSmi failing{.program = Program(9, "NVIDIA-SMI has failed")};
  const absl::Status status = failing.CreateDeviceNodes();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("nvidia-smi: exited with code 9: NVIDIA-SMI has failed"));
}

TEST_F(NvidiaSmiTest, AMissingProgramIsAnError) {
  const NvidiaSmi reset{.program = (dir_ / "absent").string()};
  const absl::Status status = reset.Reset({"0000:18:00.0"});
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()), HasSubstr("absent -r -i 0000:18:00.0"));
}

TEST_F(NvidiaSmiTest, AHungResetIsStoppedAtTheTimeout) {
  const std::filesystem::path path = dir_ / "hang";
  std::ofstream(path) << "#!/bin/sh\nsleep 30\n";
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  const NvidiaSmi reset{.program = path.string(), .timeout = absl::Milliseconds(200)};
  EXPECT_EQ(reset.Reset({"0000:18:00.0"}).code(), absl::StatusCode::kDeadlineExceeded);
}

}  // namespace
}  // namespace gpuop::hw
