#include "test/cluster/ports.h"

#include <set>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace gpuop::test {
namespace {

TEST(PortsTest, ReturnsDistinctBindablePorts) {
  auto ports = PickFreeLoopbackPorts(8);
  ASSERT_TRUE(ports.ok()) << ports.status();
  ASSERT_EQ(ports->size(), 8u);
  EXPECT_EQ(std::set<int>(ports->begin(), ports->end()).size(), 8u);
  for (int port : *ports) {
    EXPECT_GT(port, 0);
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << port;
    close(fd);
  }
}

TEST(PortsTest, ZeroPortsIsEmpty) {
  auto ports = PickFreeLoopbackPorts(0);
  ASSERT_TRUE(ports.ok());
  EXPECT_TRUE(ports->empty());
}

}  // namespace
}  // namespace gpuop::test
