// emit_k8s and kubernetes_manifest: the Kubernetes files described in emit.h.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>

#include "cluster/emit.h"
#include "cluster/launch_plan.h"
#include "core/escape.h"
#include "core/unique_fd.h"

namespace cuda_agent {
namespace {

namespace fs = std::filesystem;

// Resource names: DNS labels (RFC 1123) of at most 63 characters. A StatefulSet's name is kept to
// 52 so that its pods' controller-revision-hash label still fits in 63.
constexpr std::size_t kRunLabelMax = 40;
constexpr std::size_t kStatefulSetNameMax = 52;

// `text` as a DNS label: lower case, every run of other characters one '-', at most `max`.
std::string dns_label(std::string_view text, std::size_t max) {
  std::string out;
  for (char c : text) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    const bool keep = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (keep)
      out += c;
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  if (out.size() > max) out.resize(max);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "run" : out;
}

// The characters YAML 1.1 parsers (PyYAML, go-yaml) take for line breaks besides \n and \r:
// U+0085, U+2028, U+2029 in UTF-8.
constexpr std::string_view kUnicodeBreaks[] = {"\xC2\x85", "\xE2\x80\xA8", "\xE2\x80\xA9"};

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (std::size_t pos = 0; (pos = text.find(from, pos)) != std::string::npos; pos += to.size())
    text.replace(pos, from.size(), to);
  return text;
}

// A YAML double-quoted scalar (a JSON string is one, once the Unicode line breaks are escaped).
std::string yaml_quoted(std::string_view text) {
  std::string out;
  append_escaped(out, text);
  out = replace_all(std::move(out), kUnicodeBreaks[0], "\\u0085");
  out = replace_all(std::move(out), kUnicodeBreaks[1], "\\u2028");
  out = replace_all(std::move(out), kUnicodeBreaks[2], "\\u2029");
  return "\"" + out + "\"";
}

// `text` for a YAML comment: every character that could end the comment becomes '?'.
std::string comment_safe(std::string_view text) {
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    out += u < 0x20 || u == 0x7f ? '?' : c;
  }
  for (std::string_view line_break : kUnicodeBreaks)
    out = replace_all(std::move(out), line_break, "?");
  return out;
}

// Kubernetes expands $(NAME) in a container's args and env values; "$$" stands for "$".
std::string kube_literal(std::string_view text) {
  std::string out;
  for (char c : text) out += c == '$' ? std::string("$$") : std::string(1, c);
  return out;
}

// `text` as the value of a YAML mapping key at `indent` spaces: a literal block when every line
// can stand in one as it is, else a double-quoted scalar.
std::string block(std::string_view text, std::size_t indent) {
  bool literal = text.ends_with('\n') && !text.ends_with("\n\n") && !text.starts_with(' ');
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\n') || u == 0x7f) literal = false;
  }
  for (std::string_view line_break : kUnicodeBreaks) {
    if (text.find(line_break) != std::string_view::npos) literal = false;
  }
  if (!literal) return " " + yaml_quoted(text) + "\n";
  std::string out = " |\n";
  const std::string pad(indent, ' ');
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    std::string_view line = text.substr(pos, end - pos);
    out += (line.empty() ? "" : pad) + std::string(line) + "\n";
    pos = end + 1;
  }
  return out;
}

std::string base64(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const auto n = static_cast<unsigned>(static_cast<unsigned char>(bytes[i])) << 16 |
                   static_cast<unsigned>(static_cast<unsigned char>(bytes[i + 1])) << 8 |
                   static_cast<unsigned char>(bytes[i + 2]);
    for (int shift : {18, 12, 6, 0}) out += kAlphabet[(n >> shift) & 63];
  }
  if (i < bytes.size()) {
    unsigned n = static_cast<unsigned>(static_cast<unsigned char>(bytes[i])) << 16;
    if (i + 1 < bytes.size())
      n |= static_cast<unsigned>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// Nodes with the same GPU count and roles: one StatefulSet.
struct NodeKind {
  std::string name;  // the StatefulSet's name, RUN-KIND
  std::string kind;  // KIND
  std::int64_t gpus = 0;
  std::vector<std::string> roles;  // in kNodeRoles order
  std::vector<std::size_t> nodes;  // indices into Manifest::nodes, in manifest order
};

std::vector<std::string> ordered_roles(const NodeSpec& node) {
  std::vector<std::string> roles;
  for (std::string_view role : kNodeRoles) {
    if (node.has_role(role)) roles.emplace_back(role);
  }
  return roles;
}

std::string joined(const std::vector<std::string>& words, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i)
    out += (i ? std::string(separator) : "") + words[i];
  return out;
}

std::vector<NodeKind> node_kinds(const Manifest& m, const std::string& run) {
  std::vector<NodeKind> kinds;
  for (std::size_t i = 0; i < m.nodes.size(); ++i) {
    std::vector<std::string> roles = ordered_roles(m.nodes[i]);
    auto it = std::find_if(kinds.begin(), kinds.end(), [&](const NodeKind& k) {
      return k.gpus == m.nodes[i].gpus && k.roles == roles;
    });
    if (it == kinds.end()) {
      NodeKind k{.gpus = m.nodes[i].gpus, .roles = roles};
      k.kind = m.nodes[i].has_role("coordinator") ? "coordinator" : joined(roles, "-");
      it = kinds.insert(kinds.end(), std::move(k));
    }
    it->nodes.push_back(i);
  }
  std::map<std::string, int> uses;
  for (const NodeKind& k : kinds) ++uses[k.kind];
  std::set<std::string> names;
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    NodeKind& k = kinds[i];
    if (uses[k.kind] > 1) k.kind += "-" + std::to_string(k.gpus) + "gpu";
    k.name = dns_label(run + "-" + k.kind, kStatefulSetNameMax);
    if (!names.insert(k.name).second) {  // two long names cut to one: number this one
      const std::string suffix = "-" + std::to_string(i);
      k.name = dns_label(run + "-" + k.kind, kStatefulSetNameMax - suffix.size()) + suffix;
      names.insert(k.name);
    }
  }
  return kinds;
}

std::string pod_host(const NodeKind& kind, std::size_t ordinal, const std::string& service) {
  return kind.name + "-" + std::to_string(ordinal) + "." + service;
}

// A manifest path as the pods see it: relative ones under kPodWorkDir.
std::string pod_path(const std::string& as_written) {
  if (as_written.empty() || fs::path(as_written).is_absolute()) return as_written;
  return (fs::path(kPodWorkDir) / as_written).lexically_normal().string();
}

// The three [security] key files: their names in the Secret and the pods, their manifest keys.
struct KeyFile {
  std::string_view secret_key;  // file name in the Secret and under kPodKeyDir
  std::string_view manifest_key;
  std::string SecurityOptions::*option;
  fs::path ResolvedPaths::*resolved;
};
constexpr KeyFile kKeyFiles[] = {
    {"server.key_secret", "server_secret_key_file", &SecurityOptions::server_secret_key_file,
     &ResolvedPaths::server_secret_key_file},
    {"client.key_secret", "client_secret_key_file", &SecurityOptions::client_secret_key_file,
     &ResolvedPaths::client_secret_key_file},
    {"server.key", "server_public_key_file", &SecurityOptions::server_public_key_file,
     &ResolvedPaths::server_public_key_file},
};

std::string labels(const std::string& run, const std::string& component, std::size_t indent) {
  const std::string pad(indent, ' ');
  std::string out = pad + "app.kubernetes.io/name: \"cuda-agent\"\n";
  out += pad + "app.kubernetes.io/instance: " + yaml_quoted(run) + "\n";
  if (!component.empty())
    out += pad + "app.kubernetes.io/component: " + yaml_quoted(component) + "\n";
  return out;
}

std::string configmap(const Manifest& m, const Manifest& pods, const std::string& run) {
  std::string out = "# The manifest of run '" + m.run.name +
                    "' as its pods run it (cluster/emit.h, kubernetes_manifest):\n"
                    "# each host is its pod's DNS name, key files are in " +
                    std::string(kPodKeyDir) + "\n# and relative paths are under " +
                    std::string(kPodWorkDir) + ". Manifest host -> pod host:\n";
  for (std::size_t i = 0; i < m.nodes.size(); ++i) {
    out += "#   " + comment_safe(m.nodes[i].host) + " -> " + pods.nodes[i].host + "\n";
  }
  out += "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + yaml_quoted(run + "-manifest") +
         "\n  labels:\n" + labels(run, "", 4) +
         "data:\n  manifest.toml:" + block(render_manifest(pods), 4);
  return out;
}

// The bytes of `file`; the error message is the system's reason.
Expected<std::string> read_whole_file(const fs::path& file) {
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  std::string bytes;
  char buffer[4096];
  ssize_t n = 0;
  while (fd.fd >= 0 && (n = ::read(fd.fd, buffer, sizeof buffer)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    bytes.append(buffer, static_cast<std::size_t>(n));
  }
  if (fd.fd < 0 || n < 0) return make_error(ErrorCategory::kIo, "io", std::strerror(errno));
  return bytes;
}

Expected<std::string> secret(const Manifest& m, const std::string& run) {
  std::string out = "# The CURVE keys of run '" + m.run.name +
                    "', read from its [security] key files when this file was\n"
                    "# written. Every pod mounts them at " +
                    std::string(kPodKeyDir) +
                    " (loading the manifest checks all\n# three). Keep this file private.\n"
                    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: " +
                    yaml_quoted(run + "-curve-keys") + "\n  labels:\n" + labels(run, "", 4) +
                    "type: Opaque\ndata:\n";
  for (const KeyFile& key : kKeyFiles) {
    const fs::path& file = m.paths.*key.resolved;
    Expected<std::string> bytes = read_whole_file(file);
    if (!bytes) {
      return make_error(ErrorCategory::kIo, "emit.key_file_unreadable",
                        m.file.string() + ": [security] " + std::string(key.manifest_key) +
                            ": cannot read key file " + file.string() + ": " +
                            bytes.error().message);
    }
    out += "  " + std::string(key.secret_key) + ": " + yaml_quoted(base64(*bytes)) + "\n";
  }
  return out;
}

// The ports the Service lists: port_base + 0..5 (RunOptions::port_base), then those of the plan's
// processes: the learners' MASTER_PORT and each policy engine's --port.
std::vector<std::pair<std::string, std::string>> service_ports(const Manifest& m,
                                                               const std::vector<NodePlan>& plan) {
  const std::int64_t base = m.run.port_base;
  std::vector<std::pair<std::string, std::string>> ports = {
      {"coordinator", std::to_string(base)},
      {"compile-clients", std::to_string(base + 1)},
      {"compile-workers", std::to_string(base + 2)},
      {"bench-clients", std::to_string(base + 3)},
      {"bench-workers", std::to_string(base + 4)},
      {"metrics", std::to_string(coordinator_metrics_port(m))}};
  std::string master_port;
  std::vector<std::string> engine_ports;
  for (const NodePlan& node : plan) {
    for (const ProcessSpec& p : node.processes) {
      if (auto it = p.env.find("MASTER_PORT"); it != p.env.end()) master_port = it->second;
      auto port = std::find(p.argv.begin(), p.argv.end(), "--port");
      if (p.name.starts_with("policy-engine") && port != p.argv.end() && port + 1 != p.argv.end())
        engine_ports.push_back(*(port + 1));
    }
  }
  if (!master_port.empty()) ports.emplace_back("learner-master", master_port);
  for (std::size_t i = 0; i < engine_ports.size(); ++i)
    ports.emplace_back("engine-" + std::to_string(i), engine_ports[i]);
  return ports;
}

std::string service(const Manifest& m, const std::vector<NodePlan>& plan, const std::string& run) {
  std::string out =
      "# The headless Service of run '" + m.run.name +
      "'. Every pod resolves in the namespace as\n# POD." + run +
      ", the host name the ConfigMap's manifest gives it, also before it is ready (the\n"
      "# processes find each other while they start). Ports: port_base+0 coordinator, +1/+2\n"
      "# compile farm, +3/+4 bench pool, +5 metrics, then the launch plan's learner rendezvous\n"
      "# and policy engines.\n"
      "apiVersion: v1\nkind: Service\nmetadata:\n  name: " +
      yaml_quoted(run) + "\n  labels:\n" + labels(run, "", 4) +
      "spec:\n  clusterIP: None\n  publishNotReadyAddresses: true\n  selector:\n" +
      labels(run, "", 4) + "  ports:\n";
  for (const auto& [name, port] : service_ports(m, plan)) {
    out += "    - name: " + name + "\n      port: " + port + "\n      protocol: TCP\n";
  }
  return out;
}

std::string statefulset(const Manifest& m, const Manifest& pods, const std::vector<NodePlan>& plan,
                        const NodeKind& kind, const std::string& run, const std::string& image) {
  const std::size_t count = kind.nodes.size();
  std::string out = "# Node kind '" + kind.kind + "' of run '" + m.run.name +
                    "': " + std::to_string(count) + (count == 1 ? " node" : " nodes") + " with " +
                    std::to_string(kind.gpus) + (kind.gpus == 1 ? " GPU" : " GPUs") +
                    ",\n# roles: " + joined(kind.roles, ", ") +
                    ".\n# Each pod runs the node agent of the manifest host its DNS name stands "
                    "for:\n";
  for (std::size_t j = 0; j < count; ++j) {
    const std::size_t i = kind.nodes[j];
    out += "#   " + kind.name + "-" + std::to_string(j) + "  " + comment_safe(m.nodes[i].host) +
           " (" + std::to_string(plan[i].processes.size()) + " processes)\n";
  }
  const bool shared_dirs = pods.store.dir == pods.run.checkpoint_dir;
  out +=
      "# Volumes are hostPath: the manifest's paths name directories of the machines ([store] dir\n"
      "# on the coordinator's local disk, [run] checkpoint_dir on a file system that every "
      "learner\n"
      "# node reaches). A PersistentVolumeClaim template would give each pod a volume of its own,\n"
      "# where checkpoints must be shared, and a shared ReadWriteMany claim needs a storage class\n"
      "# this file cannot know. Keep the coordinator's pod on one machine (add a nodeSelector) so\n"
      "# that a restarted coordinator finds its store. [model] path and [tasks] must be in the\n"
      "# image or on volumes you add.\n";
  out += "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: " + yaml_quoted(kind.name) +
         "\n  labels:\n" + labels(run, kind.kind, 4) + "spec:\n  serviceName: " + yaml_quoted(run) +
         "\n  replicas: " + std::to_string(count) +
         "\n  # Every node agent starts at once; the processes wait for their peers themselves.\n"
         "  podManagementPolicy: Parallel\n  selector:\n    matchLabels:\n" +
         labels(run, kind.kind, 6) + "  template:\n    metadata:\n      labels:\n" +
         labels(run, kind.kind, 8) +
         "    spec:\n"
         "      # The node agent turns SIGTERM into a drain of its processes.\n"
         "      terminationGracePeriodSeconds: 120\n"
         "      containers:\n"
         "        - name: node-agent\n"
         "          image: " +
         yaml_quoted(image) +
         "\n          command: [\"cuda-agent\"]\n"
         "          args:\n";
  for (const std::string& arg :
       {std::string("node-agent"), std::string("--manifest"), std::string(kPodManifestPath),
        std::string("--host"), "$(POD_NAME)." + run}) {
    out += "            - " + yaml_quoted(arg) + "\n";
  }
  out +=
      "          env:\n"
      "            - name: POD_NAME\n"
      "              valueFrom:\n"
      "                fieldRef:\n"
      "                  fieldPath: metadata.name\n"
      "            - name: NCCL_NVLS_ENABLE\n"
      "              value: \"0\"\n";
  if (!m.run.nccl_socket_ifname.empty()) {
    out +=
        "            - name: NCCL_SOCKET_IFNAME  # [run] nccl_socket_ifname\n              "
        "value: " +
        yaml_quoted(kube_literal(m.run.nccl_socket_ifname)) + "\n";
  }
  if (!m.run.control_interface.empty()) {
    out +=
        "            - name: CUDA_AGENT_CONTROL_INTERFACE  # [run] control_interface\n"
        "              value: " +
        yaml_quoted(kube_literal(m.run.control_interface)) + "\n";
  }
  if (kind.gpus > 0) {
    out += "          resources:\n            limits:\n              nvidia.com/gpu: " +
           std::to_string(kind.gpus) + "\n";
  }
  out +=
      "          volumeMounts:\n"
      "            - name: manifest\n"
      "              mountPath: " +
      yaml_quoted(kPodManifestPath) +
      "\n              subPath: manifest.toml\n"
      "              readOnly: true\n";
  if (m.security.enabled()) {
    out += "            - name: curve-keys\n              mountPath: " + yaml_quoted(kPodKeyDir) +
           "\n              readOnly: true\n";
  }
  out +=
      "            - name: store\n              mountPath: " + yaml_quoted(pods.store.dir) + "\n";
  if (!shared_dirs) {
    out += "            - name: checkpoints\n              mountPath: " +
           yaml_quoted(pods.run.checkpoint_dir) + "\n";
  }
  out += "            - name: dshm\n              mountPath: /dev/shm\n";
  out +=
      "      volumes:\n"
      "        - name: manifest\n"
      "          configMap:\n"
      "            name: " +
      yaml_quoted(run + "-manifest") + "\n";
  if (m.security.enabled()) {
    out += "        - name: curve-keys\n          secret:\n            secretName: " +
           yaml_quoted(run + "-curve-keys") + "\n            defaultMode: 256  # 0400\n";
  }
  out += "        - name: store\n          hostPath:\n            path: " +
         yaml_quoted(pods.store.dir) + "\n            type: DirectoryOrCreate\n";
  if (!shared_dirs) {
    out += "        - name: checkpoints\n          hostPath:\n            path: " +
           yaml_quoted(pods.run.checkpoint_dir) + "\n            type: DirectoryOrCreate\n";
  }
  out +=
      "        # NCCL and torch share memory between processes through /dev/shm, 64 MiB in a\n"
      "        # container by default.\n"
      "        - name: dshm\n          emptyDir:\n            medium: Memory\n";
  return out;
}

}  // namespace

Manifest kubernetes_manifest(const Manifest& manifest) {
  Manifest pods = manifest;
  const std::string run = dns_label(manifest.run.name, kRunLabelMax);
  for (const NodeKind& kind : node_kinds(manifest, run)) {
    for (std::size_t j = 0; j < kind.nodes.size(); ++j)
      pods.nodes[kind.nodes[j]].host = pod_host(kind, j, run);
  }
  pods.file = kPodManifestPath;
  pods.base_dir = fs::path(kPodManifestPath).parent_path();
  pods.store.dir = pod_path(manifest.store.dir);
  pods.run.checkpoint_dir = pod_path(manifest.run.checkpoint_dir);
  pods.tasks.train_set = pod_path(manifest.tasks.train_set);
  pods.tasks.eval_set = pod_path(manifest.tasks.eval_set);
  pods.model.path = pod_path(manifest.model.path);
  pods.rollout.replay_transcripts = pod_path(manifest.rollout.replay_transcripts);
  if (manifest.security.enabled()) {
    for (const KeyFile& key : kKeyFiles)
      pods.security.*key.option = (fs::path(kPodKeyDir) / key.secret_key).string();
  }
  // Every path is absolute or empty now: resolved, they stay as they are.
  pods.paths = ResolvedPaths{.store_dir = pods.store.dir,
                             .checkpoint_dir = pods.run.checkpoint_dir,
                             .train_set = pods.tasks.train_set,
                             .eval_set = pods.tasks.eval_set,
                             .model_path = pods.model.path,
                             .replay_transcripts = pods.rollout.replay_transcripts,
                             .server_secret_key_file = pods.security.server_secret_key_file,
                             .client_secret_key_file = pods.security.client_secret_key_file,
                             .server_public_key_file = pods.security.server_public_key_file};
  return pods;
}

Expected<std::vector<EmittedFile>> emit_k8s(const Manifest& manifest, const EmitOptions& options) {
  const std::string run = dns_label(manifest.run.name, kRunLabelMax);
  const std::string image = options.image.empty() ? default_image() : options.image;
  const Manifest pods = kubernetes_manifest(manifest);
  const std::vector<NodePlan> plan = plan_launch(pods, std::string(kPodManifestPath));

  std::vector<EmittedFile> files;
  files.push_back({.name = "configmap.yaml", .text = configmap(manifest, pods, run)});
  if (manifest.security.enabled()) {
    ASSIGN_OR_RETURN(std::string text, secret(manifest, run));
    files.push_back({.name = "secret.yaml", .text = std::move(text), .secret = true});
  }
  files.push_back({.name = "service.yaml", .text = service(manifest, plan, run)});
  for (const NodeKind& kind : node_kinds(manifest, run)) {
    files.push_back({.name = "statefulset-" + kind.kind + ".yaml",
                     .text = statefulset(manifest, pods, plan, kind, run, image)});
  }
  return files;
}

}  // namespace cuda_agent
