// Every gpuop-agent command line the operator renders (containers, init containers, exec probes)
// is accepted by the gpuop-agent it runs: the real binary parses it (GPUOP_AGENT_CHECK_ARGS) and
// refuses an unknown flag, a bad value or a missing option exactly as it would at start. The
// golden files pin what is rendered; this checks that it runs.
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/str_join.h"
#include "common/process.h"
#include "operator/render/render_test_util.h"

namespace gpuop::op {
namespace {

using render_test::Json;
using render_test::Render;
using render_test::Scenarios;

// The gpuop-agent command lines in a pod spec.
void AgentCommands(const Json& pod_spec, std::vector<std::vector<std::string>>& out) {
  auto take = [&out](const Json& command) {
    if (!command.is_array() || command.empty() || command[0] != "gpuop-agent") return;
    std::vector<std::string> argv;
    for (const Json& arg : command) argv.push_back(arg.get<std::string>());
    out.push_back(std::move(argv));
  };
  for (const char* list : {"initContainers", "containers"}) {
    for (const Json& c : pod_spec.value(list, Json::array())) {
      take(c.value("command", Json()));
      for (const char* probe : {"readinessProbe", "livenessProbe", "startupProbe"}) {
        take(c.value(probe, Json::object()).value("exec", Json::object()).value("command", Json()));
      }
      take(c.value("lifecycle", Json::object())
               .value("preStop", Json::object())
               .value("exec", Json::object())
               .value("command", Json()));
    }
  }
}

TEST(AgentArgsTest, EveryRenderedAgentCommandIsAcceptedByTheAgent) {
  std::vector<std::vector<std::string>> commands;
  for (const auto& scenario : Scenarios()) {
    for (const Json& object : Render(scenario.input)) {
      if (object.value("kind", "") != "DaemonSet") continue;
      AgentCommands(object["spec"]["template"]["spec"], commands);
    }
  }
  std::set<std::string> subcommands;
  for (const auto& argv : commands) subcommands.insert(argv.size() > 1 ? argv[1] : "");
  // The components whose commands must have been seen, so the test cannot pass on nothing.
  for (const char* sub : {"labels", "device-plugin", "health", "exporter", "validate", "mig",
                          "power", "cdi", "runtime"}) {
    EXPECT_TRUE(subcommands.contains(sub)) << "no rendered command runs gpuop-agent " << sub;
  }
  const std::filesystem::path output =
      std::filesystem::temp_directory_path() / ("gpuop-agent-args-" + std::to_string(getpid()));
  for (std::vector<std::string> argv : commands) {
    argv[0] = GPUOP_AGENT_BINARY;
    std::filesystem::remove(output);
    absl::StatusOr<common::Subprocess> agent = common::Subprocess::Spawn(
        {.argv = argv, .env = {"GPUOP_AGENT_CHECK_ARGS=1"}, .output_path = output});
    ASSERT_TRUE(agent.ok()) << agent.status();
    absl::StatusOr<int> status = agent->Wait(absl::Seconds(30));
    ASSERT_TRUE(status.ok()) << status.status();
    std::ifstream in(output);
    const std::string said((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
        << absl::StrJoin(argv, " ") << ": " << common::DescribeWaitStatus(*status) << "\n"
        << said;
  }
  std::filesystem::remove(output);
}

// The check mode itself refuses what the agent refuses.
TEST(AgentArgsTest, TheCheckRefusesAnUnknownFlag) {
  absl::StatusOr<common::Subprocess> agent =
      common::Subprocess::Spawn({.argv = {GPUOP_AGENT_BINARY, "exporter", "--limit-record=/x"},
                                 .env = {"GPUOP_AGENT_CHECK_ARGS=1"},
                                 .output_path = "/dev/null"});
  ASSERT_TRUE(agent.ok()) << agent.status();
  absl::StatusOr<int> status = agent->Wait(absl::Seconds(30));
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_FALSE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
}

}  // namespace
}  // namespace gpuop::op
