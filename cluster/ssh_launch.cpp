#include "cluster/ssh_launch.h"

#include <algorithm>
#include <sstream>
#include <thread>

#include "cluster/launch_plan.h"
#include "core/log.h"
#include "tasks/child_process.h"

namespace cuda_agent {

namespace {

Error bad_options(const std::string& what) {
  return make_error(ErrorCategory::kInvalidInput, "launch.bad_options", "launch --ssh: " + what);
}

Status check_options(const SshLaunchOptions& o) {
  if (o.ssh_command.empty()) return bad_options("the ssh command is empty");
  if (o.remote_manifest_path.empty()) return bad_options("no manifest path for the remote hosts");
  if (o.local_version.empty()) return bad_options("no local version to compare with");
  if (o.log_dir.empty()) return bad_options("no log directory for the ssh sessions");
  if (o.remote_program.empty()) return bad_options("no remote program");
  return Status::ok();
}

// The lines of a --version text with \r and trailing white space gone, trailing empty lines
// dropped.
std::vector<std::string> version_lines(std::string_view text) {
  std::vector<std::string> lines;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
      line.pop_back();
    }
    lines.push_back(line);
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  return text;
}

// One host's preflight: its problem (code and sentence), or an empty code.
struct HostCheck {
  std::string host;
  std::string code;
  std::string problem;
};

HostCheck check_host(const SshLaunchOptions& o, const std::string& host) {
  HostCheck out{.host = host};
  const std::int64_t timeout_ms = o.preflight_timeout_ms.count();
  ChildSpec spec{.argv = ssh_version_argv(o, host),
                 // ssh may write known_hosts; nothing else is limited beyond the defaults.
                 .limits = {.file_size_bytes = std::int64_t{64} << 20},
                 .first_line_timeout_ms = timeout_ms,
                 .next_line_timeout_ms = timeout_ms};
  std::string answer;
  auto run = run_line_child(spec, "", [&](std::string_view line) {
    answer.append(line);
    answer += '\n';
  });
  if (!run) {
    out.code = "launch.host_check_failed";
    out.problem = "host " + host + ": cannot run the ssh command: " + run.error().message;
    return out;
  }
  const std::string stderr_tail = trimmed(run->stderr_tail);
  if (run->timed_out) {
    out.code = "launch.host_timeout";
    out.problem = "host " + host + " did not answer `" + o.remote_program + " --version` within " +
                  std::to_string(timeout_ms) + " ms" +
                  (stderr_tail.empty() ? "" : "; ssh said: " + stderr_tail);
    return out;
  }
  if (run->exit_code == 255) {
    out.code = "launch.host_unreachable";
    out.problem = "host " + host + " is unreachable (ssh exited 255): " +
                  (stderr_tail.empty() ? "(ssh printed nothing)" : stderr_tail);
    return out;
  }
  if (run->exit_code != 0) {
    out.code = "launch.host_check_failed";
    out.problem = "host " + host + ": `" + o.remote_program + " --version` " + run->describe() +
                  (stderr_tail.empty() ? "" : ": " + stderr_tail);
    return out;
  }
  const std::vector<std::string> theirs = version_lines(answer);
  const std::vector<std::string> ours = version_lines(o.local_version);
  if (theirs != ours) {
    std::size_t i = 0;
    while (i < theirs.size() && i < ours.size() && theirs[i] == ours[i]) ++i;
    const auto at = [](const std::vector<std::string>& v, std::size_t k) {
      return k < v.size() ? "'" + v[k] + "'" : std::string("(no such line)");
    };
    out.code = "launch.version_mismatch";
    out.problem = "host " + host + " runs a different cuda-agent: its `--version` line " +
                  std::to_string(i + 1) + " is " + at(theirs, i) + ", this machine's is " +
                  at(ours, i);
  }
  return out;
}

}  // namespace

std::vector<std::string> split_ssh_command(std::string_view command) {
  std::vector<std::string> words;
  std::string word;
  for (const char c : command) {
    if (c == ' ' || c == '\t') {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

std::vector<std::string> manifest_hosts(const Manifest& manifest) {
  std::vector<std::string> hosts;
  for (const NodeSpec& n : manifest.nodes) {
    if (std::find(hosts.begin(), hosts.end(), n.host) == hosts.end()) hosts.push_back(n.host);
  }
  return hosts;
}

std::vector<std::string> ssh_version_argv(const SshLaunchOptions& o, const std::string& host) {
  std::vector<std::string> argv = o.ssh_command;
  argv.push_back(host);
  argv.push_back(shell_quote(o.remote_program));
  argv.push_back("--version");
  return argv;
}

std::vector<std::string> ssh_node_agent_argv(const SshLaunchOptions& o, const std::string& host) {
  std::vector<std::string> argv = o.ssh_command;
  if (o.force_tty) argv.push_back("-tt");
  argv.push_back(host);
  std::vector<std::string> remote = {o.remote_program,       "node-agent", "--manifest",
                                     o.remote_manifest_path, "--host",     host};
  remote.insert(remote.end(), o.node_agent_args.begin(), o.node_agent_args.end());
  for (const std::string& w : remote) argv.push_back(shell_quote(w));
  return argv;
}

Status ssh_preflight(const Manifest& manifest, const SshLaunchOptions& options) {
  RETURN_IF_ERROR(check_options(options));
  const std::vector<std::string> hosts = manifest_hosts(manifest);
  std::vector<HostCheck> checks(hosts.size());
  const std::size_t parallel = static_cast<std::size_t>(std::max(1, options.preflight_parallel));
  for (std::size_t begin = 0; begin < hosts.size(); begin += parallel) {
    std::vector<std::thread> threads;
    for (std::size_t i = begin; i < std::min(hosts.size(), begin + parallel); ++i) {
      threads.emplace_back([&, i] { checks[i] = check_host(options, hosts[i]); });
    }
    for (std::thread& t : threads) t.join();
  }
  std::string code;
  std::string message;
  for (const HostCheck& c : checks) {
    if (c.code.empty()) continue;
    if (code.empty()) code = c.code;
    message += (message.empty() ? "" : "\n") + c.problem;
  }
  if (code.empty()) {
    log_info("ssh preflight passed", {{"hosts", std::to_string(hosts.size())}});
    return Status::ok();
  }
  const ErrorCategory category = code == "launch.version_mismatch" ? ErrorCategory::kInvalidInput
                                                                   : ErrorCategory::kUnavailable;
  return make_error(category, code, "launch --ssh refused before starting anything:\n" + message);
}

SshLaunch::SshLaunch(const Manifest& manifest, SshLaunchOptions options)
    : options_(std::move(options)),
      coordinator_host_(manifest.coordinator().host),
      sessions_({.log_dir = options_.log_dir,
                 .max_restarts = options_.max_restarts_per_window,
                 .restart_window_ms = options_.restart_window_ms,
                 .restart_backoff_ms = options_.restart_backoff_ms,
                 .max_backoff_ms = std::chrono::milliseconds(60'000),
                 .stop_grace_ms = options_.stop_grace_ms}) {}

SshLaunch::~SshLaunch() { stop(); }

Expected<std::unique_ptr<SshLaunch>> SshLaunch::start(const Manifest& manifest,
                                                      SshLaunchOptions options) {
  RETURN_IF_ERROR(check_options(options));
  std::unique_ptr<SshLaunch> launch(new SshLaunch(manifest, std::move(options)));
  for (const std::string& host : manifest_hosts(manifest)) {
    const ProcessSpec spec{
        .role = "node-agent", .name = host, .argv = ssh_node_agent_argv(launch->options_, host)};
    if (Status s = launch->sessions_.start(spec); !s) {
      launch->stop();
      return make_error(
          s.error().category, s.error().code,
          "launch --ssh: starting the node agent of " + host + ": " + s.error().message);
    }
    log_info("node agent started over ssh",
             {{"host", host},
              {"pid", std::to_string(launch->sessions_.pid(host))},
              {"log", launch->options_.log_dir + "/" + host + ".log"}});
  }
  return launch;
}

bool SshLaunch::poll() {
  if (ended_) return false;
  for (const ChildEvent& e : sessions_.poll()) {
    switch (e.kind) {
      case ChildEventKind::kExited:
        if (e.exit_code != 0) {
          log_warn("ssh session ended",
                   {{"host", e.name}, {"exit", std::to_string(e.exit_code)}, {"log", e.log_path}});
        }
        break;
      case ChildEventKind::kRestarted:
        log_info("node agent started again over ssh", {{"host", e.name}});
        break;
      case ChildEventKind::kGivenUp:
        if (e.name == coordinator_host_ && (e.expected || e.exit_code == 3)) {
          ended_ = true;
          exit_code_ = e.expected ? 0 : 3;
          log_info("the coordinator's node ended; stopping the other nodes",
                   {{"host", e.name}, {"exit", std::to_string(e.exit_code)}});
        } else if (e.expected) {
          log_info("node finished", {{"host", e.name}});
        } else {
          failed_ = true;
          log_error("node given up: its ssh session keeps failing; the others go on",
                    {{"host", e.name}, {"exit", std::to_string(e.exit_code)}, {"log", e.log_path}});
        }
        break;
    }
  }
  if (!ended_) {
    const std::vector<ChildInfo> all = sessions_.children();
    const bool alive = std::any_of(all.begin(), all.end(), [](const ChildInfo& c) {
      return c.state == ChildState::kRunning || c.state == ChildState::kRestartPending;
    });
    if (!alive) {
      ended_ = true;
      exit_code_ = failed_ ? 1 : 0;
    }
  }
  if (ended_) {
    stop();
    return false;
  }
  return true;
}

void SshLaunch::stop() {
  ended_ = true;
  if (!sessions_.running().empty()) {
    log_info("stopping every node agent (their sessions close; each node drains)", {});
  }
  sessions_.stop_all();
}

Expected<std::unique_ptr<SshLaunch>> ssh_start(const Manifest& manifest,
                                               const SshLaunchOptions& options) {
  return SshLaunch::start(manifest, options);
}

Expected<int> run_ssh_launch(const Manifest& manifest, const SshLaunchOptions& options,
                             const std::function<bool()>& stop_requested) {
  RETURN_IF_ERROR(ssh_preflight(manifest, options));
  auto launch = ssh_start(manifest, options);
  if (!launch) return launch.error();
  for (;;) {
    if (stop_requested()) {
      (*launch)->stop();
      break;
    }
    if (!(*launch)->poll()) break;
    std::this_thread::sleep_for(options.poll_interval_ms);
  }
  return (*launch)->exit_code();
}

}  // namespace cuda_agent
