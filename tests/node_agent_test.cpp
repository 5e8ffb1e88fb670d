// `cuda-agent node-agent` as a process (issue 26, cluster/node_agent.h), its roles played by the
// shim of tests/node_agent_fixture.h: plan-order start behind the coordinator's store, one log per
// process, restarts with a doubling backoff, a degraded node past the bound (and at once on exit
// 3) whose other processes keep running, SIGTERM draining to exit 0 with nothing left, the agent's
// SIGKILL taking its processes with it, the coordinator's finish ending the node, an unknown
// host refused with the manifest's hosts, and the agent's heartbeats reaching the coordinator's
// port with its node's degradation.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include <zmq.hpp>

#include "cli_runner.h"
#include "cluster/manifest.h"
#include "cluster/node_agent.h"
#include "messages/coordinator_codec.h"
#include "node_agent_fixture.h"

namespace cuda_agent {
namespace {

using namespace std::chrono_literals;
using namespace testing;

constexpr const char* kManifest = R"([run]
name = "agent-test"
port_base = 6100
[store]
dir = "store"
[[nodes]]
host = "node-x"
gpus = 0
roles = ["coordinator", "compile", "rollout"]
compile_workers = 2
[[nodes]]
host = "node-y"
gpus = 0
roles = ["learner"]
)";

struct AgentRun {
  TempTree tree{"ca_node_agent"};
  fs::path manifest = tree.path / "run.toml";
  fs::path shim = tree.path / "role-shim";
  fs::path logs = tree.path / "logs";
  fs::path output = tree.path / "agent.out";
  std::vector<std::string> names;  // node-x's processes in plan order
  pid_t pid = -1;

  AgentRun() {
    write_file(manifest, kManifest);
    write_file(shim, kRoleShim, true);
    ::setenv("ROLE_SHIM_DIR", tree.path.c_str(), 1);
    ::setenv("SHIM_STORE", (tree.path / "store").c_str(), 1);
    auto m = load_manifest(manifest);
    EXPECT_TRUE(m) << m.error().message;
    auto plan = node_plan_for_host(*m, manifest.string(), "node-x");
    EXPECT_TRUE(plan);
    for (const ProcessSpec& p : plan->processes) names.push_back(p.name);
  }
  ~AgentRun() {
    if (pid > 0 && wait_exit(pid, 0ms) < 0) {
      ::kill(pid, SIGKILL);
      wait_exit(pid, 5s);
    }
  }
  void start(std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {CUDA_AGENT_EXE, "node-agent", "--manifest", manifest.string(),
                                     "--host",       "node-x",     "--log-dir",  logs.string(),
                                     "--child-exe",  shim.string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    pid = spawn(argv, output);
    ASSERT_GT(pid, 0);
  }
  nlohmann::json status() const { return read_status(logs / "node-status.json"); }
  // Waits until every process of node-x runs and has journaled its start; returns their pids by
  // name.
  std::map<std::string, pid_t> wait_all_running() {
    std::map<std::string, pid_t> pids;
    const bool ok = wait_until(
        [&] {
          const nlohmann::json s = status();
          if (s.is_null() || s["processes"].size() != names.size()) return false;
          pids.clear();
          for (const auto& p : s["processes"]) {
            if (p["state"] != "running") return false;
            pids[p["name"]] = p["pid"].get<pid_t>();
          }
          std::set<std::string> journaled;
          for (const JournalEntry& e : read_journal(tree.path))
            if (e.event == "start") journaled.insert(e.name);
          return journaled.size() == names.size();
        },
        20s);
    EXPECT_TRUE(ok) << status().dump(1) << "\n" << read_file(output);
    return pids;
  }
  std::vector<JournalEntry> starts_of(const std::string& name) const {
    std::vector<JournalEntry> out;
    for (const JournalEntry& e : read_journal(tree.path))
      if (e.event == "start" && e.name == name) out.push_back(e);
    return out;
  }
};

TEST(NodeAgent, StartsInPlanOrderBehindTheStoreAndDrainsOnSigterm) {
  AgentRun run;
  run.start();
  const std::map<std::string, pid_t> pids = run.wait_all_running();
  ASSERT_EQ(pids.size(), run.names.size());

  // The agent forked them in plan order (its log says so, and so does the status file, which
  // lists processes in start order); the shims' own journal lines race each other, except that
  // the coordinator's comes first: the others start only once its store exists.
  std::vector<std::string> forked;
  std::istringstream agent_log(read_file(run.output));
  for (std::string line; std::getline(agent_log, line);) {
    const auto at = line.find("process=");
    if (line.find("\"process started\"") == std::string::npos || at == std::string::npos) continue;
    std::istringstream word(line.substr(at + 8));
    forked.emplace_back();
    word >> forked.back();
  }
  EXPECT_EQ(forked, run.names) << read_file(run.output);
  std::vector<std::string> listed;
  const nlohmann::json now = run.status();
  for (const auto& p : now["processes"]) listed.push_back(p["name"]);
  EXPECT_EQ(listed, run.names);
  std::multiset<std::string> started;
  for (const JournalEntry& e : read_journal(run.tree.path)) {
    if (e.event != "start") continue;
    if (started.empty()) {
      EXPECT_EQ(e.name, "coordinator");
    }
    started.insert(e.name);
    EXPECT_EQ(e.node, "node-x");
  }
  // Each once, nothing of node-y.
  EXPECT_EQ(started, std::multiset<std::string>(run.names.begin(), run.names.end()));
  EXPECT_TRUE(fs::exists(run.tree.path / "store" / "CURRENT"));
  for (const std::string& name : run.names) {
    EXPECT_TRUE(fs::exists(run.logs / (name + ".log"))) << name;
  }
  const nlohmann::json s = run.status();
  EXPECT_EQ(s["host"], "node-x");
  EXPECT_EQ(s["state"], "running");
  EXPECT_EQ(s["agent_pid"], run.pid);

  ASSERT_EQ(::kill(run.pid, SIGTERM), 0);
  EXPECT_EQ(wait_exit(run.pid, 20s), 0) << read_file(run.output);
  run.pid = -1;
  for (const auto& [name, pid] : pids) EXPECT_FALSE(alive(pid)) << name;
  const nlohmann::json end = run.status();
  EXPECT_EQ(end["state"], "stopped");
  EXPECT_EQ(end["reason"], "stop requested");
  ASSERT_EQ(end["processes"].size(), run.names.size());
  for (const auto& p : end["processes"]) {
    EXPECT_TRUE(p["pid"].is_null()) << p.dump();
    EXPECT_EQ(p["state"], "stopped") << p.dump();
    EXPECT_EQ(p["last_exit"], 128 + SIGTERM) << p.dump();  // SIGTERM ended it, not the SIGKILL
  }
}

TEST(NodeAgent, CrashLoopBacksOffThenDegradesTheNodeAndSparesTheOthers) {
  AgentRun run;
  write_file(run.tree.path / "crash-compile-worker-1", "");
  write_file(run.tree.path / "fatal-rollout-worker-cpu", "");
  run.start({"--max-restarts", "2"});  // the real backoff: 1 s, then 2 s
  const bool degraded = wait_until(
      [&] {
        const nlohmann::json s = run.status();
        const nlohmann::json crash = process_status(s, "compile-worker-1");
        const nlohmann::json fatal = process_status(s, "rollout-worker-cpu");
        return !crash.is_null() && !fatal.is_null() && crash["state"] == "given_up" &&
               fatal["state"] == "given_up";
      },
      20s);
  ASSERT_TRUE(degraded) << run.status().dump(1) << "\n" << read_file(run.output);

  const nlohmann::json s = run.status();
  EXPECT_EQ(s["state"], "degraded");
  EXPECT_NE(s["reason"].get<std::string>().find("compile-worker-1"), std::string::npos);
  EXPECT_NE(s["reason"].get<std::string>().find("rollout-worker-cpu"), std::string::npos);
  const nlohmann::json crash = process_status(s, "compile-worker-1");
  EXPECT_EQ(crash["restarts"], 2);
  EXPECT_EQ(crash["last_exit"], 1);
  const nlohmann::json fatal = process_status(s, "rollout-worker-cpu");
  EXPECT_EQ(fatal["restarts"], 0);  // exit 3 is final
  EXPECT_EQ(fatal["last_exit"], 3);

  const std::vector<JournalEntry> starts = run.starts_of("compile-worker-1");
  ASSERT_EQ(starts.size(), 3u);
  const double first_pause = starts[1].seconds - starts[0].seconds;
  const double second_pause = starts[2].seconds - starts[1].seconds;
  EXPECT_GE(first_pause, 0.95);
  EXPECT_GE(second_pause, 1.95);
  EXPECT_GT(second_pause, first_pause + 0.5);  // doubled

  // The others were started once and still run under their first pid.
  for (const std::string& name : run.names) {
    if (name == "compile-worker-1" || name == "rollout-worker-cpu") continue;
    const std::vector<JournalEntry> once = run.starts_of(name);
    ASSERT_EQ(once.size(), 1u) << name;
    const nlohmann::json p = process_status(s, name);
    EXPECT_EQ(p["state"], "running") << name;
    EXPECT_EQ(p["pid"], once[0].pid) << name;
    EXPECT_TRUE(alive(once[0].pid)) << name;
  }
  const std::string out = read_file(run.output);
  EXPECT_NE(out.find("node degraded"), std::string::npos) << out;

  ASSERT_EQ(::kill(run.pid, SIGTERM), 0);
  EXPECT_EQ(wait_exit(run.pid, 20s), 0) << read_file(run.output);
  run.pid = -1;
  EXPECT_EQ(run.status()["state"], "stopped");
}

TEST(NodeAgent, ProcessesDieWithAKilledAgent) {
  AgentRun run;
  run.start();
  const std::map<std::string, pid_t> pids = run.wait_all_running();
  ASSERT_EQ(::kill(run.pid, SIGKILL), 0);
  EXPECT_EQ(wait_exit(run.pid, 5s), 128 + SIGKILL);
  run.pid = -1;
  for (const auto& [name, pid] : pids) {
    EXPECT_TRUE(wait_until([&] { return !alive(pid); }, 5s)) << name << " outlived its agent";
  }
}

TEST(NodeAgent, TheCoordinatorFinishingTheRunEndsTheNode) {
  AgentRun run;
  write_file(run.tree.path / "done-coordinator", "");
  run.start({"--store-wait-ms", "0"});
  EXPECT_EQ(wait_exit(run.pid, 20s), 0) << read_file(run.output);
  run.pid = -1;
  const nlohmann::json s = run.status();
  EXPECT_EQ(s["state"], "stopped");
  EXPECT_NE(s["reason"].get<std::string>().find("finished the run"), std::string::npos) << s;
  for (const auto& p : s["processes"]) EXPECT_TRUE(p["pid"].is_null()) << p.dump();
}

TEST(NodeAgent, AnUnknownHostIsRefusedNamingTheManifestsHosts) {
  AgentRun run;
  const CmdResult r =
      run_cli("node-agent --manifest " + run.manifest.string() + " --host node-z --log-dir " +
              run.logs.string() + " --child-exe " + run.shim.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("'node-z'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("node-x, node-y"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(run.tree.path / "journal"));  // nothing started
}

// The agent heartbeats the coordinator as a member of the run (role node_agent): healthy first,
// then, once it gave a process up, with the reason. The coordinator here is a bare ROUTER on the
// manifest's coordinator port that decodes what arrives.
TEST(NodeAgent, HeartbeatsTheCoordinatorWithItsNodesDegradation) {
  zmq::context_t context(1);
  zmq::socket_t coordinator(context, zmq::socket_type::router);
  coordinator.set(zmq::sockopt::linger, 0);
  coordinator.bind("tcp://127.0.0.1:*");
  const std::string bound = coordinator.get(zmq::sockopt::last_endpoint);
  const std::string port = bound.substr(bound.rfind(':') + 1);

  TempTree tree{"ca_node_agent_report"};
  const fs::path manifest_path = tree.path / "run.toml";
  write_file(manifest_path, "[run]\nname = \"report-test\"\nport_base = " + port +
                                "\nheartbeat_interval_ms = 200\n[store]\ndir = \"store\"\n"
                                "[[nodes]]\nhost = \"localhost\"\ngpus = 0\n"
                                "roles = [\"coordinator\", \"compile\"]\ncompile_workers = 1\n");
  write_file(tree.path / "role-shim", kRoleShim, true);
  ::setenv("ROLE_SHIM_DIR", tree.path.c_str(), 1);
  ::setenv("SHIM_STORE", (tree.path / "store").c_str(), 1);
  auto m = load_manifest(manifest_path);
  ASSERT_TRUE(m) << m.error().message;
  auto plan = node_plan_for_host(*m, manifest_path.string(), "localhost");
  ASSERT_TRUE(plan) << plan.error().message;
  std::string worker;
  for (const ProcessSpec& p : plan->processes)
    if (p.name.find("compile-worker") == 0) worker = p.name;
  ASSERT_FALSE(worker.empty());

  auto agent = NodeAgent::start(*m, {.host = "localhost",
                                     .manifest_path_for_argv = manifest_path.string(),
                                     .log_dir = (tree.path / "logs").string(),
                                     .cuda_agent_exe = (tree.path / "role-shim").string()});
  ASSERT_TRUE(agent) << agent.error().to_string();
  // Reads heartbeats for up to `timeout` while the agent polls; the last one seen.
  auto next_heartbeat = [&](const std::function<bool(const Heartbeat&)>& wanted,
                            std::chrono::milliseconds timeout) -> std::optional<Heartbeat> {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      (*agent)->poll();
      zmq::pollitem_t item{coordinator.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(50));
      if (!(item.revents & ZMQ_POLLIN)) continue;
      zmq::message_t routing, frame;
      (void)coordinator.recv(routing);
      (void)coordinator.recv(frame);
      auto decoded = decode_coordinator_frame(frame.to_string_view());
      EXPECT_TRUE(decoded) << decoded.error().to_string();
      if (!decoded) continue;
      EXPECT_EQ(decoded->run_id, RunId{"report-test"});
      const auto* h = std::get_if<Heartbeat>(&decoded->body);
      if (h != nullptr && wanted(*h)) return *h;
    }
    return std::nullopt;
  };
  auto healthy = next_heartbeat([](const Heartbeat&) { return true; }, 10s);
  ASSERT_TRUE(healthy) << "no heartbeat from the node agent";
  EXPECT_EQ(healthy->member, WorkerId{"node-agent/localhost"});
  EXPECT_EQ(healthy->role, MemberRole::kNodeAgent);
  EXPECT_EQ(healthy->degraded, "");

  write_file(tree.path / ("fatal-" + worker), "");  // its next start exits 3: given up at once
  pid_t pid = -1;
  const bool started = wait_until(
      [&] {
        (*agent)->poll();
        for (const ChildInfo& c : (*agent)->status().processes)
          if (c.name == worker) pid = c.pid;
        return pid > 0;
      },
      20s);
  ASSERT_TRUE(started) << worker << " did not start behind the coordinator's store";
  ::kill(pid, SIGKILL);
  auto degraded = next_heartbeat([](const Heartbeat& h) { return !h.degraded.empty(); }, 20s);
  ASSERT_TRUE(degraded) << "no heartbeat reported the node degraded; node state "
                        << to_string((*agent)->status().state);
  EXPECT_NE(degraded->degraded.find(worker), std::string::npos) << degraded->degraded;
  (*agent)->drain("test over");
}

}  // namespace
}  // namespace cuda_agent
