#include "cluster/node_agent.h"

#include <unistd.h>

#include <fstream>
#include <thread>

#include "core/escape.h"
#include "core/log.h"

namespace cuda_agent {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string_view to_string(NodeState state) {
  switch (state) {
    case NodeState::kRunning: return "running";
    case NodeState::kDegraded: return "degraded";
    case NodeState::kDraining: return "draining";
    case NodeState::kStopped: return "stopped";
  }
  return "unknown";
}

namespace {

void append_string(std::string& out, std::string_view value) {
  out += '"';
  append_escaped(out, value);
  out += '"';
}

bool is_coordinator(const ProcessSpec& p) {
  return p.role == "coordinator" && p.argv.size() > 2 && p.argv[1] == "serve" &&
         p.argv[2] == "coordinator";
}

std::string host_list(const std::vector<NodePlan>& plan) {
  std::string out;
  for (const NodePlan& n : plan) out += (out.empty() ? "" : ", ") + n.host;
  return out;
}

}  // namespace

std::string node_status_json(const NodeStatus& status, std::int64_t agent_pid,
                             std::int64_t updated_unix_ms) {
  std::string out = "{\"host\": ";
  append_string(out, status.host);
  out += ", \"state\": ";
  append_string(out, to_string(status.state));
  out += ", \"reason\": ";
  append_string(out, status.reason);
  out += ", \"agent_pid\": " + std::to_string(agent_pid);
  out += ", \"updated_unix_ms\": " + std::to_string(updated_unix_ms);
  out += ",\n \"processes\": [";
  bool first = true;
  for (const ChildInfo& c : status.processes) {
    out += first ? "\n  {\"name\": " : ",\n  {\"name\": ";
    first = false;
    append_string(out, c.name);
    out += ", \"role\": ";
    append_string(out, c.role);
    out += ", \"state\": ";
    append_string(out, to_string(c.state));
    out += ", \"pid\": " + (c.pid > 0 ? std::to_string(c.pid) : std::string("null"));
    out += ", \"restarts\": " + std::to_string(c.restarts);
    out += ", \"last_exit\": " +
           (c.last_exit_code >= 0 ? std::to_string(c.last_exit_code) : std::string("null"));
    out += "}";
  }
  out += "]}\n";
  return out;
}

Expected<NodePlan> node_plan_for_host(const Manifest& manifest,
                                      const std::string& manifest_path_for_argv,
                                      const std::string& host) {
  std::vector<NodePlan> plan = plan_launch(manifest, manifest_path_for_argv);
  for (NodePlan& node : plan) {
    if (node.host == host) return std::move(node);
  }
  return make_error(ErrorCategory::kInvalidInput, "launch.unknown_host",
                    "host '" + host + "' is not a node of the manifest " + manifest.file.string() +
                        " (its hosts: " + host_list(plan) + ")");
}

NodeAgent::NodeAgent(NodeAgentOptions options, NodePlan plan)
    : options_(std::move(options)),
      plan_(std::move(plan)),
      children_({.log_dir = options_.log_dir,
                 .max_restarts = options_.max_restarts_per_window,
                 .restart_window_ms = options_.restart_window_ms,
                 .restart_backoff_ms = options_.restart_backoff_ms,
                 .max_backoff_ms = options_.max_backoff_ms,
                 .stop_grace_ms = options_.stop_grace_ms,
                 .cuda_agent_exe = options_.cuda_agent_exe}),
      status_path_((fs::path(options_.log_dir) / "node-status.json").string()) {}

NodeAgent::~NodeAgent() { drain("the node agent is shutting down"); }

Expected<std::unique_ptr<NodeAgent>> NodeAgent::start(const Manifest& manifest,
                                                      NodeAgentOptions options) {
  if (options.host.empty()) {
    return make_error(ErrorCategory::kInvalidInput, "launch.no_host",
                      "node agent: no host given (the manifest's hosts: " +
                          host_list(plan_launch(manifest, options.manifest_path_for_argv)) + ")");
  }
  auto plan = node_plan_for_host(manifest, options.manifest_path_for_argv, options.host);
  if (!plan) return plan.error();
  if (options.log_dir.empty()) {
    options.log_dir = (manifest.paths.store_dir.parent_path() / "logs" / options.host).string();
  }
  std::error_code ec;
  fs::create_directories(options.log_dir, ec);
  if (ec) {
    return make_error(ErrorCategory::kIo, "launch.log_dir",
                      "node agent for " + options.host + ": cannot create the log directory " +
                          options.log_dir + ": " + ec.message());
  }
  std::unique_ptr<NodeAgent> agent(new NodeAgent(std::move(options), std::move(*plan)));
  agent->store_dir_ = manifest.paths.store_dir;
  if (agent->options_.report_to_coordinator) agent->connect_reporter(manifest);
  log_info("node agent starting", {{"host", agent->plan_.host},
                                   {"processes", std::to_string(agent->plan_.processes.size())},
                                   {"log_dir", agent->options_.log_dir}});
  if (Status s = agent->start_next(); !s) {
    agent->drain("a process could not be started");
    return make_error(s.error().category, s.error().code,
                      "node " + agent->plan_.host + ": " + s.error().message);
  }
  agent->write_status();
  return agent;
}

void NodeAgent::connect_reporter(const Manifest& manifest) {
  // Heartbeats only: nothing waits on the coordinator, which may start later or on another node.
  auto failed = [&](const Error& e) {
    log_warn("the node agent does not report to the coordinator",
             {{"host", plan_.host}, {"error", e.to_string()}});
  };
  auto options = coordinator_client_options(manifest, WorkerId{"node-agent/" + plan_.host},
                                            MemberRole::kNodeAgent);
  if (!options) return failed(options.error());
  auto client = CoordinatorClient::connect(std::move(*options));
  if (!client) return failed(client.error());
  reporter_ = std::move(*client);
}

Status NodeAgent::start_next() {
  while (next_ < plan_.processes.size()) {
    if (waiting_for_store_) {
      const bool there = fs::exists(store_dir_ / "CURRENT");
      if (!there && Clock::now() < store_deadline_) return Status::ok();
      if (!there) {
        log_warn("the run store did not appear in time; starting the other processes anyway",
                 {{"store", store_dir_.string()},
                  {"waited_ms", std::to_string(options_.store_wait_ms.count())}});
      }
      waiting_for_store_ = false;
    }
    ProcessSpec spec = plan_.processes[next_];
    // Who a process is, for its own logs and for test shims that play the roles.
    spec.env["CUDA_AGENT_PROCESS"] = spec.name;
    spec.env["CUDA_AGENT_NODE"] = plan_.host;
    RETURN_IF_ERROR(children_.start(spec));
    ++next_;
    log_info("process started", {{"process", spec.name},
                                 {"role", spec.role},
                                 {"pid", std::to_string(children_.pid(spec.name))}});
    if (is_coordinator(spec)) {
      coordinator_name_ = spec.name;
      if (options_.store_wait_ms.count() > 0 && next_ < plan_.processes.size()) {
        waiting_for_store_ = true;
        store_deadline_ = Clock::now() + options_.store_wait_ms;
      }
    }
  }
  return Status::ok();
}

void NodeAgent::handle(const ChildEvent& e) {
  switch (e.kind) {
    case ChildEventKind::kExited:
      if (e.exit_code == 0) break;
      log_warn("process exited", {{"process", e.name},
                                  {"role", e.role},
                                  {"exit", std::to_string(e.exit_code)},
                                  {"log", e.log_path}});
      break;
    case ChildEventKind::kRestarted:
      log_info(
          "process restarted",
          {{"process", e.name}, {"role", e.role}, {"pid", std::to_string(children_.pid(e.name))}});
      break;
    case ChildEventKind::kGivenUp: {
      if (e.name == coordinator_name_ && (e.expected || e.exit_code == 3)) {
        ended_ = true;
        exit_code_ = e.expected ? 0 : 3;
        reason_ = e.expected ? "the coordinator finished the run"
                             : "the coordinator reported that the run cannot go on (exit 3)";
        log_info("the coordinator ended; stopping the node", {{"reason", reason_}});
        break;
      }
      if (e.expected) {
        log_info("process finished its work", {{"process", e.name}, {"role", e.role}});
        break;
      }
      const std::string why =
          e.exit_code == 3
              ? "process " + e.name + " exited with code 3 (a restart cannot fix it)"
              : "process " + e.name + " was given up after " +
                    std::to_string(options_.max_restarts_per_window) + " restarts in " +
                    std::to_string(options_.restart_window_ms.count() / 1000) + " s (last exit " +
                    std::to_string(e.exit_code) + ")";
      state_ = NodeState::kDegraded;
      reason_ = reason_.empty() ? why : reason_ + "; " + why;
      log_error("node degraded; its other processes keep running",
                {{"host", plan_.host}, {"why", why}, {"log", e.log_path}});
      break;
    }
  }
}

bool NodeAgent::poll() {
  if (ended_) return false;
  bool changed = false;
  for (const ChildEvent& e : children_.poll()) {
    handle(e);
    changed = true;
  }
  if (!ended_ && next_ < plan_.processes.size()) {
    const std::size_t before = next_;
    for (Status s = start_next(); !s; s = start_next()) {
      const std::string why =
          "process " + plan_.processes[next_].name + " could not be started: " + s.error().message;
      log_error("node degraded; its other processes keep running",
                {{"host", plan_.host}, {"why", why}});
      state_ = NodeState::kDegraded;
      reason_ = reason_.empty() ? why : reason_ + "; " + why;
      ++next_;
    }
    changed = changed || next_ != before;
  }
  if (!ended_ && next_ >= plan_.processes.size()) {
    bool alive = false;
    for (const ChildInfo& c : children_.children()) {
      alive = alive || c.state == ChildState::kRunning || c.state == ChildState::kRestartPending;
    }
    if (!alive) {
      ended_ = true;
      exit_code_ = state_ == NodeState::kDegraded ? 1 : 0;
      if (reason_.empty()) reason_ = "every process finished its work";
      log_info("nothing left to supervise", {{"host", plan_.host}, {"reason", reason_}});
    }
  }
  if (ended_) {
    drain(reason_);
    return false;
  }
  if (changed || Clock::now() >= next_status_) write_status();
  return true;
}

void NodeAgent::drain(const std::string& why) {
  if (state_ == NodeState::kStopped) return;
  ended_ = true;
  state_ = NodeState::kDraining;
  reason_ = why;
  write_status();
  log_info("draining the node", {{"host", plan_.host},
                                 {"why", why},
                                 {"grace_ms", std::to_string(options_.stop_grace_ms.count())}});
  children_.stop_all();
  state_ = NodeState::kStopped;
  write_status();
  log_info("node stopped", {{"host", plan_.host}});
}

NodeStatus NodeAgent::status() const {
  return {
      .host = plan_.host, .state = state_, .reason = reason_, .processes = children_.children()};
}

void NodeAgent::write_status() {
  next_status_ = Clock::now() + options_.status_interval_ms;
  if (reporter_) reporter_->set_degraded(state_ == NodeState::kDegraded ? reason_ : "");
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const std::string tmp = status_path_ + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << node_status_json(status(), ::getpid(), now_ms);
    if (!out.flush()) {
      log_warn("cannot write the node status", {{"path", tmp}});
      return;
    }
  }
  std::error_code ec;
  fs::rename(tmp, status_path_, ec);
  if (ec) log_warn("cannot write the node status", {{"path", status_path_}, {"why", ec.message()}});
}

Expected<int> run_node_agent(const Manifest& manifest, const NodeAgentOptions& options,
                             const std::function<bool()>& stop_requested) {
  auto agent = NodeAgent::start(manifest, options);
  if (!agent) return agent.error();
  for (;;) {
    if (stop_requested()) {
      (*agent)->drain("stop requested");
      break;
    }
    if (!(*agent)->poll()) break;
    std::this_thread::sleep_for(options.poll_interval_ms);
  }
  return (*agent)->exit_code();
}

}  // namespace cuda_agent
