#include "agent/cdi/amd_generator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/cdi/fake_driver_root.h"
#include "agent/cdi/validate.h"
#include "test/fakes/sysfs/fake_sysfs.h"

namespace gpuop::agent::cdi {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// AMD GPUs as hw::AmdAccelerator reports them: kfd plus the DRM card and render nodes.
hw::Inventory AmdInventory(int count, const std::string& dev_root = "/dev") {
  hw::Inventory inventory;
  for (int i = 0; i < count; ++i) {
    hw::Gpu gpu;
    gpu.vendor = hw::Vendor::kAmd;
    gpu.index = i;
    gpu.pci_bus_id = absl::StrFormat("0000:%02x:00.0", 0x11 + i * 0x10);
    gpu.uuid = gpu.pci_bus_id;
    gpu.device_nodes = {dev_root + "/kfd", absl::StrCat(dev_root, "/dri/card", i + 1),
                        absl::StrCat(dev_root, "/dri/renderD", 128 + i)};
    inventory.gpus.push_back(std::move(gpu));
  }
  return inventory;
}

class CdiAmdGeneratorTest : public ::testing::Test {
 protected:
  void AddNodes(int count, const std::string& dev_root = "/dev") {
    devices_.AddChar(dev_root + "/kfd", 235, 0);
    for (int i = 0; i < count; ++i) {
      devices_.AddChar(absl::StrCat(dev_root, "/dri/card", i + 1), 226, i + 1);
      devices_.AddChar(absl::StrCat(dev_root, "/dri/renderD", 128 + i), 226, 128 + i);
    }
  }

  fakes::TempDir root_;
  testing::FakeDevices devices_{root_.path()};
};

TEST_F(CdiAmdGeneratorTest, GpusByIndexAndPciAddress) {
  AddNodes(2);
  HostFiles files = devices_.files();
  files.record_device_numbers = true;  // the numbers are written when asked for
  absl::StatusOr<GeneratedSpec> out = AmdCdiGenerator({.files = files}).Generate(AmdInventory(2));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->warnings, IsEmpty());
  EXPECT_TRUE(ValidateSpec(out->spec).ok());
  EXPECT_EQ(SpecToJsonText(out->spec), R"({
  "cdiVersion": "0.5.0",
  "kind": "amd.com/gpu",
  "devices": [
    {
      "name": "0",
      "containerEdits": {
        "deviceNodes": [
          {
            "path": "/dev/dri/card1",
            "type": "c",
            "major": 226,
            "minor": 1
          },
          {
            "path": "/dev/dri/renderD128",
            "type": "c",
            "major": 226,
            "minor": 128
          }
        ]
      }
    },
    {
      "name": "0000:11:00.0",
      "containerEdits": {
        "deviceNodes": [
          {
            "path": "/dev/dri/card1",
            "type": "c",
            "major": 226,
            "minor": 1
          },
          {
            "path": "/dev/dri/renderD128",
            "type": "c",
            "major": 226,
            "minor": 128
          }
        ]
      }
    },
    {
      "name": "1",
      "containerEdits": {
        "deviceNodes": [
          {
            "path": "/dev/dri/card2",
            "type": "c",
            "major": 226,
            "minor": 2
          },
          {
            "path": "/dev/dri/renderD129",
            "type": "c",
            "major": 226,
            "minor": 129
          }
        ]
      }
    },
    {
      "name": "0000:21:00.0",
      "containerEdits": {
        "deviceNodes": [
          {
            "path": "/dev/dri/card2",
            "type": "c",
            "major": 226,
            "minor": 2
          },
          {
            "path": "/dev/dri/renderD129",
            "type": "c",
            "major": 226,
            "minor": 129
          }
        ]
      }
    },
    {
      "name": "all",
      "containerEdits": {
        "deviceNodes": [
          {
            "path": "/dev/dri/card1",
            "type": "c",
            "major": 226,
            "minor": 1
          },
          {
            "path": "/dev/dri/renderD128",
            "type": "c",
            "major": 226,
            "minor": 128
          },
          {
            "path": "/dev/dri/card2",
            "type": "c",
            "major": 226,
            "minor": 2
          },
          {
            "path": "/dev/dri/renderD129",
            "type": "c",
            "major": 226,
            "minor": 129
          }
        ]
      }
    }
  ],
  "containerEdits": {
    "deviceNodes": [
      {
        "path": "/dev/kfd",
        "type": "c",
        "major": 235,
        "minor": 0
      }
    ]
  }
}
)");
}

TEST_F(CdiAmdGeneratorTest, DevRootElsewhereSetsHostPaths) {
  AddNodes(1, "/host/dev");
  absl::StatusOr<GeneratedSpec> out =
      AmdCdiGenerator({.dev_root = "/host/dev", .files = devices_.files()})
          .Generate(AmdInventory(1, "/host/dev"));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->spec.devices[0].container_edits.device_nodes[0].path, "/dev/dri/card1");
  EXPECT_EQ(out->spec.devices[0].container_edits.device_nodes[0].host_path, "/host/dev/dri/card1");
  EXPECT_EQ(out->spec.container_edits.device_nodes[0].host_path, "/host/dev/kfd");
}

TEST_F(CdiAmdGeneratorTest, MissingNodesAreWarnings) {
  devices_.AddChar("/dev/dri/card1", 226, 1);
  devices_.AddChar("/dev/dri/renderD128", 226, 128);
  absl::StatusOr<GeneratedSpec> out =
      AmdCdiGenerator({.files = devices_.files()}).Generate(AmdInventory(2));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(
      out->warnings,
      ElementsAre("GPU 1 (0000:21:00.0) left out: device node /dev/dri/card2 does not exist",
                  "device node /dev/kfd does not exist; compute needs it"));
  EXPECT_EQ(out->spec.devices.size(), 3u);  // 0, 0000:11:00.0, all
  EXPECT_TRUE(out->spec.container_edits.empty());
}

TEST_F(CdiAmdGeneratorTest, RejectsNodesOutsideDevRootAndOtherVendors) {
  AddNodes(1);
  EXPECT_THAT(AmdCdiGenerator({.files = devices_.files()})
                  .Generate(AmdInventory(1, "/elsewhere"))
                  .status()
                  .message(),
              HasSubstr("GPU 0 (0000:11:00.0) device node /elsewhere/kfd is not under /dev"));
  hw::Inventory nvidia = AmdInventory(1);
  nvidia.gpus[0].vendor = hw::Vendor::kNvidia;
  EXPECT_EQ(AmdCdiGenerator({.files = devices_.files()}).Generate(nvidia).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpuop::agent::cdi
