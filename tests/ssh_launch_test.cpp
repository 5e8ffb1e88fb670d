// The ssh backend (issue 26, cluster/ssh_launch.h) driving examples/two-nodes.toml through a fake
// ssh: a script taking [-tt] [-o OPT]... HOST COMMAND that runs COMMAND through sh in
// FAKE_REMOTE_ROOT/HOST with that directory's bin/ first on PATH, and, as sshd does for a pty
// session, sends it SIGHUP when the session ends (its SIGTERM, or its death: setpriv
// --pdeathsig). A host directory holding `unreachable` makes it fail as ssh does (exit 255 and a
// message); one holding `hang` makes it never answer; a missing directory is an unknown host.
// Each fake remote's `cuda-agent` prints the directory's `version` file for --version and runs the
// real node agent for node-agent, with the role shim of tests/node_agent_fixture.h.
//
// Covered: preflight passes on matching hosts and refuses an unreachable host, a version mismatch
// and a host past the deadline, each naming the host, with nothing started; start runs exactly one
// node agent per node, each starting its node's plan; stop ends them all; a SIGKILLed launcher
// takes every node down.
#include <gtest/gtest.h>

#include <set>

#include "cluster/launch_plan.h"
#include "cluster/manifest.h"
#include "cluster/ssh_launch.h"
#include "node_agent_fixture.h"

namespace cuda_agent {
namespace {

using namespace std::chrono_literals;
using namespace testing;

constexpr const char* kFakeSsh = R"SH(#!/bin/sh
while [ $# -gt 0 ]; do
  case "$1" in
    -tt|-t|-T|-n) shift ;;
    -o) shift 2 ;;
    -*) echo "fake ssh: unknown option $1" >&2; exit 255 ;;
    *) break ;;
  esac
done
host=$1
shift
echo "$host $*" >> "$FAKE_REMOTE_ROOT/ssh-calls"
dir=$FAKE_REMOTE_ROOT/$host
if [ ! -d "$dir" ]; then
  echo "ssh: Could not resolve hostname $host: Name or service not known" >&2; exit 255
fi
if [ -e "$dir/unreachable" ]; then
  echo "ssh: connect to host $host port 22: Connection refused" >&2; exit 255
fi
[ -e "$dir/hang" ] && exec sleep 60
cd "$dir" || exit 255
export FAKE_HOST=$host PATH="$dir/bin:$PATH"
trap 'kill -HUP $child 2>/dev/null; exit 255' TERM INT HUP
setpriv --pdeathsig HUP sh -c "exec $*" &
child=$!
wait $child
)SH";

constexpr const char* kFakeRemoteCudaAgent = R"SH(#!/bin/sh
if [ "$1" = "--version" ]; then cat "$FAKE_REMOTE_ROOT/$FAKE_HOST/version"; exit 0; fi
if [ "$1" = "node-agent" ]; then
  shift
  echo "$FAKE_HOST $$ $*" >> "$FAKE_REMOTE_ROOT/agents"
  exec "$REAL_CUDA_AGENT" node-agent "$@" --log-dir "$FAKE_REMOTE_ROOT/$FAKE_HOST/logs" \
    --child-exe "$ROLE_SHIM" --store-wait-ms 0 --stop-grace-ms 5000
fi
echo "fake cuda-agent: unexpected arguments: $*" >&2
exit 2
)SH";

constexpr const char* kVersion = "cuda-agent 9.9.9 (test)\n  compiler test, CUDA toolkit none\n";

struct FakeCluster {
  TempTree tree{"ca_ssh_launch"};
  fs::path remotes = tree.path / "remotes";
  fs::path ssh = tree.path / "fake-ssh";
  fs::path manifest_path = fs::path(CUDA_AGENT_SOURCE_DIR) / "examples" / "two-nodes.toml";
  Manifest manifest;
  SshLaunchOptions options;

  FakeCluster() {
    write_file(ssh, kFakeSsh, true);
    write_file(tree.path / "role-shim", kRoleShim, true);
    for (const char* host : {"node-a", "node-b"}) {
      write_file(remotes / host / "bin" / "cuda-agent", kFakeRemoteCudaAgent, true);
      write_file(remotes / host / "version", kVersion);
    }
    ::setenv("FAKE_REMOTE_ROOT", remotes.c_str(), 1);
    ::setenv("REAL_CUDA_AGENT", CUDA_AGENT_EXE, 1);
    ::setenv("ROLE_SHIM", (tree.path / "role-shim").c_str(), 1);
    ::setenv("ROLE_SHIM_DIR", tree.path.c_str(), 1);
    ::unsetenv("SHIM_STORE");
    auto m = load_manifest(manifest_path);
    EXPECT_TRUE(m) << m.error().message;
    manifest = *m;
    options.remote_manifest_path = manifest_path.string();
    options.local_version = kVersion;
    options.log_dir = (tree.path / "ssh-logs").string();
    options.ssh_command =
        split_ssh_command(ssh.string() + " -o BatchMode=yes  -o ConnectTimeout=10");
    options.preflight_timeout_ms = 10s;
    options.stop_grace_ms = 5s;
  }
  std::vector<std::string> ssh_calls() const {
    std::vector<std::string> lines;
    std::istringstream in(read_file(remotes / "ssh-calls"));
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
  bool any_node_agent_started() const {
    for (const std::string& line : ssh_calls())
      if (line.find("node-agent") != std::string::npos) return true;
    return false;
  }
  nlohmann::json status(const std::string& host) const {
    return read_status(remotes / host / "logs" / "node-status.json");
  }
  // The pids of every fake remote process: node agents and the roles they started.
  std::vector<pid_t> remote_pids() const {
    std::vector<pid_t> pids;
    std::istringstream agents(read_file(remotes / "agents"));
    for (std::string line; std::getline(agents, line);) {
      std::istringstream words(line);
      std::string host;
      pid_t pid = 0;
      words >> host >> pid;
      pids.push_back(pid);
    }
    for (const JournalEntry& e : read_journal(tree.path))
      if (e.event == "start") pids.push_back(e.pid);
    return pids;
  }
  // Waits until each host's node agent reports its whole plan running and each role has journaled.
  bool wait_nodes_running() const {
    const std::vector<NodePlan> plan = plan_launch(manifest, manifest_path.string());
    return wait_until(
        [&] {
          for (const NodePlan& node : plan) {
            const nlohmann::json s = status(node.host);
            if (s.is_null() || s["processes"].size() != node.processes.size()) return false;
            for (const auto& p : s["processes"])
              if (p["state"] != "running") return false;
          }
          std::size_t started = 0;
          for (const JournalEntry& e : read_journal(tree.path)) started += e.event == "start";
          return started == 19 + 8;  // every role has journaled its start
        },
        30s);
  }
};

TEST(SshLaunch, PreflightPassesWhenEveryHostRunsTheSameVersion) {
  FakeCluster c;
  const Status s = ssh_preflight(c.manifest, c.options);
  ASSERT_TRUE(s.is_ok()) << s.error().message;
  std::set<std::string> asked;
  for (const std::string& line : c.ssh_calls()) asked.insert(line);
  EXPECT_EQ(asked,
            (std::set<std::string>{"node-a cuda-agent --version", "node-b cuda-agent --version"}));
}

TEST(SshLaunch, PreflightRefusesAnUnreachableHostBeforeStartingAnything) {
  FakeCluster c;
  write_file(c.remotes / "node-b" / "unreachable", "");
  const Expected<int> s = run_ssh_launch(c.manifest, c.options, [] { return false; });
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().code, "launch.host_unreachable");
  EXPECT_NE(s.error().message.find("host node-b is unreachable"), std::string::npos)
      << s.error().message;
  EXPECT_NE(s.error().message.find("Connection refused"), std::string::npos) << s.error().message;
  EXPECT_EQ(s.error().message.find("node-a"), std::string::npos) << s.error().message;
  EXPECT_FALSE(c.any_node_agent_started());
}

TEST(SshLaunch, PreflightRefusesAVersionMismatchNamingHostAndBothVersions) {
  FakeCluster c;
  write_file(c.remotes / "node-a" / "version", "cuda-agent 9.9.8 (other)\n  compiler test\n");
  const Expected<int> s = run_ssh_launch(c.manifest, c.options, [] { return false; });
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().code, "launch.version_mismatch");
  EXPECT_NE(s.error().message.find("host node-a"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("'cuda-agent 9.9.8 (other)'"), std::string::npos)
      << s.error().message;
  EXPECT_NE(s.error().message.find("'cuda-agent 9.9.9 (test)'"), std::string::npos)
      << s.error().message;
  EXPECT_EQ(s.error().message.find("node-b"), std::string::npos) << s.error().message;
  EXPECT_FALSE(c.any_node_agent_started());
}

TEST(SshLaunch, PreflightGivesUpOnAHostThatDoesNotAnswerInTime) {
  FakeCluster c;
  write_file(c.remotes / "node-b" / "hang", "");
  c.options.preflight_timeout_ms = 1s;
  const auto t0 = std::chrono::steady_clock::now();
  const Status s = ssh_preflight(c.manifest, c.options);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.error().code, "launch.host_timeout");
  EXPECT_NE(s.error().message.find("host node-b did not answer"), std::string::npos)
      << s.error().message;
}

TEST(SshLaunch, StartRunsOneNodeAgentPerNodeAndStopEndsThemAll) {
  FakeCluster c;
  ASSERT_TRUE(ssh_preflight(c.manifest, c.options).is_ok());
  auto launch = ssh_start(c.manifest, c.options);
  ASSERT_TRUE(launch) << launch.error().message;
  ASSERT_TRUE(c.wait_nodes_running()) << c.status("node-a").dump(1) << c.status("node-b").dump(1)
                                      << read_file(c.options.log_dir + "/node-a.log");
  EXPECT_TRUE((*launch)->poll());

  // Exactly one agent per node, for its own host, with the manifest as the remote sees it.
  const std::string agents = read_file(c.remotes / "agents");
  std::istringstream lines(agents);
  std::map<std::string, int> per_host;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string host;
    words >> host;
    per_host[host] += 1;
    EXPECT_NE(line.find("--manifest " + c.manifest_path.string() + " --host " + host),
              std::string::npos)
        << line;
  }
  EXPECT_EQ(per_host, (std::map<std::string, int>{{"node-a", 1}, {"node-b", 1}})) << agents;
  // Each ran its own node's plan, on its own (fake) host.
  for (const NodePlan& node : plan_launch(c.manifest, c.manifest_path.string())) {
    std::multiset<std::string> want, got;
    for (const ProcessSpec& p : node.processes) want.insert(p.name);
    for (const JournalEntry& e : read_journal(c.tree.path))
      if (e.event == "start" && e.node == node.host) {
        got.insert(e.name);
        EXPECT_EQ(e.fake_host, node.host) << e.name;
      }
    EXPECT_EQ(got, want) << node.host;
  }
  const std::vector<ChildInfo> sessions = (*launch)->sessions();
  ASSERT_EQ(sessions.size(), 2u);
  EXPECT_EQ(sessions[0].name, "node-a");
  EXPECT_EQ(sessions[1].name, "node-b");

  const std::vector<pid_t> pids = c.remote_pids();
  EXPECT_EQ(pids.size(), 2u + 19u + 8u);
  (*launch)->stop();
  EXPECT_EQ((*launch)->exit_code(), 0);
  for (const ChildInfo& session : (*launch)->sessions()) {
    EXPECT_EQ(session.state, ChildState::kStopped) << session.name;
  }
  for (const pid_t pid : pids) {
    EXPECT_TRUE(wait_until([&] { return !alive(pid); }, 20s)) << "pid " << pid << " still runs";
  }
  EXPECT_EQ(c.status("node-a")["state"], "stopped");
  EXPECT_EQ(c.status("node-b")["state"], "stopped");
}

TEST(SshLaunch, EveryNodeStopsWhenTheLauncherIsKilled) {
  FakeCluster c;
  const pid_t launcher = ::fork();
  if (launcher == 0) {
    auto launch = ssh_start(c.manifest, c.options);
    if (!launch) ::_exit(1);
    for (;;) {
      (*launch)->poll();
      std::this_thread::sleep_for(100ms);
    }
  }
  ASSERT_GT(launcher, 0);
  const bool running = c.wait_nodes_running();
  const std::vector<pid_t> pids = c.remote_pids();
  ::kill(launcher, SIGKILL);
  EXPECT_EQ(wait_exit(launcher, 5s), 128 + SIGKILL);
  ASSERT_TRUE(running);
  EXPECT_EQ(pids.size(), 2u + 19u + 8u);
  for (const pid_t pid : pids) {
    EXPECT_TRUE(wait_until([&] { return !alive(pid); }, 20s)) << "pid " << pid << " still runs";
  }
}

}  // namespace
}  // namespace cuda_agent
