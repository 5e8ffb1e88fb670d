// emit_slurm, write_emitted_files and the kind names; emit_k8s is in emit_k8s.cpp. The layout of
// both outputs is described in emit.h.
#include "cluster/emit.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

#include "cluster/launch_plan.h"
#include "core/unique_fd.h"
#include "core/version.h"

namespace cuda_agent {
namespace {

namespace fs = std::filesystem;

bool slurm_node_name(const std::string& host) {
  return !host.empty() && std::all_of(host.begin(), host.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

std::string node_ref(const NodeSpec& node, std::size_t index) {
  std::string ref = "node #" + std::to_string(index + 1);
  if (node.source_line > 0) ref += " (line " + std::to_string(node.source_line) + ")";
  return ref;
}

Status check_slurm_hosts(const Manifest& m) {
  for (std::size_t i = 0; i < m.nodes.size(); ++i) {
    const std::string& host = m.nodes[i].host;
    if (!slurm_node_name(host)) {
      return make_error(ErrorCategory::kInvalidInput, "emit.bad_host",
                        m.file.string() + ": host '" + host + "' of " + node_ref(m.nodes[i], i) +
                            " cannot be a Slurm node name: use letters, digits, '.', '_' and '-'");
    }
    if (is_loopback_host(host) && m.nodes.size() > 1) {
      return make_error(ErrorCategory::kInvalidInput, "emit.bad_host",
                        m.file.string() + ": host '" + host + "' of " + node_ref(m.nodes[i], i) +
                            " names the local machine in a " + std::to_string(m.nodes.size()) +
                            "-node run; a Slurm job needs each node's Slurm name");
    }
  }
  return Status::ok();
}

std::string joined(const std::vector<std::string>& words, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i)
    out += (i ? std::string(separator) : "") + words[i];
  return out;
}

std::string gpu_count(std::int64_t gpus) {
  return std::to_string(gpus) + (gpus == 1 ? " GPU" : " GPUs");
}

// The sbatch header lines of one allocation (a heterogeneous job's component).
struct SlurmComponent {
  std::int64_t gpus = 0;
  std::vector<std::size_t> nodes;  // indices into Manifest::nodes
};

std::string slurm_script(const Manifest& m, const EmitOptions& options) {
  std::vector<SlurmComponent> components;
  std::vector<std::size_t> component_of(m.nodes.size());
  for (std::size_t i = 0; i < m.nodes.size(); ++i) {
    auto it = std::find_if(components.begin(), components.end(),
                           [&](const SlurmComponent& c) { return c.gpus == m.nodes[i].gpus; });
    if (it == components.end()) it = components.insert(components.end(), {m.nodes[i].gpus, {}});
    it->nodes.push_back(i);
    component_of[i] = static_cast<std::size_t>(it - components.begin());
  }
  const bool heterogeneous = components.size() > 1;
  const bool nodelist = !(m.nodes.size() == 1 && is_loopback_host(m.nodes[0].host));
  const std::string& run = m.run.name;

  std::string out = "#!/bin/bash\n";
  out += "# Slurm batch script of run '" + run +
         "', from `cuda-agent launch MANIFEST --emit slurm`.\n";
  out +=
      "# One job step per node of the manifest runs that node's agent (`cuda-agent node-agent`),\n"
      "# which starts the node's processes of the launch plan (`cuda-agent launch MANIFEST\n"
      "# --dry-run` prints them) and keeps them running. cuda-agent must be on PATH on every "
      "node.\n"
      "# Submit with `sbatch " +
      run +
      ".sbatch`;\n# add --partition, --account and --time as your site needs.\n"
      "# Edit the manifest and emit again rather than editing this file.\n";
  if (!nodelist) {
    out += "# The manifest's one host is this machine's loopback name: Slurm picks the node.\n";
  }
  if (heterogeneous) {
    out +=
        "# Its nodes differ in GPU count, and --gpus-per-node holds for a whole allocation: a\n"
        "# heterogeneous job, one component per GPU count (srun --het-group).\n";
  }
  for (std::size_t c = 0; c < components.size(); ++c) {
    const SlurmComponent& component = components[c];
    if (c > 0) out += "#SBATCH hetjob\n";
    if (c == 0) {
      out += "#SBATCH --job-name=" + run + "\n";
      out += "#SBATCH --output=%x-%j.out\n";
    }
    out += "#SBATCH --nodes=" + std::to_string(component.nodes.size()) + "\n";
    if (nodelist) {
      std::vector<std::string> hosts;
      for (std::size_t i : component.nodes) hosts.push_back(m.nodes[i].host);
      out += "#SBATCH --nodelist=" + joined(hosts, ",") + "\n";
    }
    out += "#SBATCH --ntasks-per-node=1\n";
    // The launch plan assumes it has its nodes' GPUs and ports to itself.
    out += "#SBATCH --exclusive\n";
    if (component.gpus > 0)
      out += "#SBATCH --gpus-per-node=" + std::to_string(component.gpus) + "\n";
  }
  out += "set -euo pipefail\n\n";

  if (!options.manifest_path.empty()) {
    out +=
        "# Every node reads the manifest at this path (a shared file system, or the same copy on "
        "each).\n";
    out += "MANIFEST=" + shell_quote(options.manifest_path) + "\n\n";
  } else {
    out +=
        "# No manifest file: the node agents use the single-machine default built into them.\n\n";
  }

  out += "# srun passes this environment on to every step.\n";
  out += "export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off (cluster/launch_plan.h)\n";
  if (!m.run.nccl_socket_ifname.empty()) {
    out += "export NCCL_SOCKET_IFNAME=" + shell_quote(m.run.nccl_socket_ifname) +
           "  # [run] nccl_socket_ifname\n";
  }
  if (!m.run.control_interface.empty()) {
    out += "export CUDA_AGENT_CONTROL_INTERFACE=" + shell_quote(m.run.control_interface) +
           "  # [run] control_interface\n";
  }
  out += "\nsteps=()\n";

  std::vector<NodePlan> plan = plan_launch(m, options.manifest_path);
  for (std::size_t i = 0; i < m.nodes.size(); ++i) {
    const NodeSpec& node = m.nodes[i];
    out += "# " + node.host + ": " + gpu_count(node.gpus) + "; roles: " + joined(node.roles, ", ") +
           "; " + std::to_string(plan[i].processes.size()) + " processes\n";
    std::vector<std::string> srun = {"srun"};
    if (heterogeneous) srun.push_back("--het-group=" + std::to_string(component_of[i]));
    srun.insert(srun.end(), {"--nodes=1", "--ntasks=1"});
    if (nodelist) srun.push_back("--nodelist=" + node.host);
    srun.push_back("--output=%x-%j-" + node.host + ".out");
    std::string line;
    for (const std::string& word : srun) line += (line.empty() ? "" : " ") + shell_quote(word);
    out += line + " \\\n  cuda-agent node-agent";
    if (!options.manifest_path.empty()) out += " --manifest \"$MANIFEST\"";
    out += " --host " + shell_quote(node.host) + " &\n";
    out += "steps+=($!)\n";
  }
  out +=
      "\n# The steps run until their node agents end (scancel: SIGTERM, which they turn into a\n"
      "# drain). The job fails when a step did, with the status of the last one that failed.\n"
      "status=0\n"
      "for step in \"${steps[@]}\"; do\n"
      "  wait \"$step\" || status=$?\n"
      "done\n"
      "exit \"$status\"\n";
  return out;
}

Error write_error(const fs::path& file, const std::string& what, int err) {
  return make_error(ErrorCategory::kIo, "emit.write_failed",
                    "cannot write " + file.string() + ": " + what + ": " + std::strerror(err));
}

// Writes `text` to `file` through a temporary file in the same directory and a rename, so that
// `file` holds either its old content or all of the new.
Status write_atomically(const fs::path& file, const std::string& text, mode_t mode) {
  const fs::path tmp =
      file.parent_path() / ("." + file.filename().string() + ".tmp-" + std::to_string(::getpid()));
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  if (fd.fd < 0) return write_error(tmp, "open", errno);
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd.fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::unlink(tmp.c_str());
      return write_error(tmp, "write", err);
    }
    done += static_cast<std::size_t>(n);
  }
  const int raw_fd = std::exchange(fd.fd, -1);  // closed here, whatever fsync says
  int err = ::fsync(raw_fd) == 0 ? 0 : errno;
  if (::close(raw_fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    return write_error(tmp, "fsync/close", err);
  }
  if (::rename(tmp.c_str(), file.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return write_error(file, "rename from " + tmp.filename().string(), err);
  }
  return Status::ok();
}

}  // namespace

std::string_view to_string(EmitKind kind) { return kind == EmitKind::kSlurm ? "slurm" : "k8s"; }

Expected<EmitKind> parse_emit_kind(std::string_view word) {
  if (word == "slurm") return EmitKind::kSlurm;
  if (word == "k8s") return EmitKind::kKubernetes;
  return make_error(ErrorCategory::kInvalidInput, "emit.unknown_kind",
                    "unknown --emit kind '" + std::string(word) + "': choose slurm or k8s");
}

std::string default_image() { return std::string("cuda-agent:") + build_info::kVersion; }

Expected<std::vector<EmittedFile>> emit_slurm(const Manifest& manifest,
                                              const EmitOptions& options) {
  RETURN_IF_ERROR(check_slurm_hosts(manifest));
  return std::vector<EmittedFile>{{.name = manifest.run.name + ".sbatch",
                                   .text = slurm_script(manifest, options),
                                   .executable = true}};
}

Expected<std::vector<EmittedFile>> emit_files(EmitKind kind, const Manifest& manifest,
                                              const EmitOptions& options) {
  return kind == EmitKind::kSlurm ? emit_slurm(manifest, options) : emit_k8s(manifest, options);
}

Expected<WrittenFiles> write_emitted_files(const fs::path& dir,
                                           const std::vector<EmittedFile>& files, bool force) {
  std::error_code ec;
  std::set<fs::path> before;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) {
      return make_error(ErrorCategory::kInvalidInput, "emit.not_a_directory",
                        dir.string() + " exists and is not a directory");
    }
    for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
      before.insert(entry.path().filename());
    }
    if (ec) return write_error(dir, "list", ec.value());
    if (!before.empty() && !force) {
      return make_error(ErrorCategory::kInvalidInput, "emit.dir_not_empty",
                        dir.string() + " is not empty (" + std::to_string(before.size()) +
                            " entries, such as " + before.begin()->string() +
                            "); pass --force to write into it, replacing files of the same names");
    }
  } else if (!fs::create_directories(dir, ec) && ec) {
    return write_error(dir, "create directory", ec.value());
  }

  WrittenFiles result;
  for (const EmittedFile& file : files) {
    const mode_t mode = file.secret ? 0600 : file.executable ? 0755 : 0644;
    RETURN_IF_ERROR(write_atomically(dir / file.name, file.text, mode));
    result.written.push_back(dir / file.name);
    before.erase(file.name);
  }
  for (const fs::path& name : before) result.others.push_back(dir / name);
  // The renames are durable once the directory is.
  UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.fd < 0 || ::fsync(dir_fd.fd) != 0) return write_error(dir, "fsync", errno);
  return result;
}

}  // namespace cuda_agent
