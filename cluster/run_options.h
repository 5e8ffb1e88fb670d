// Options of the run as a whole (manifest section [run]) and of its transport security
// ([security]). See core/option_fields.h for the visit() convention; cluster/manifest.h loads and
// checks them. Plain value types: no threading contract beyond that of a struct.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/option_fields.h"

namespace cuda_agent {

struct RunOptions {
  static constexpr std::string_view kSection = "run";
  static constexpr std::string_view kDoc =
      "The run as a whole: its id, seed, ports, heartbeats, GPU sharing rules, logging and network "
      "interfaces.";

  std::string name = "local";
  std::int64_t seed = 0;
  std::string checkpoint_dir = "runs/local/checkpoints";
  std::int64_t port_base = 5550;
  std::int64_t heartbeat_interval_ms = 1000;
  std::int64_t heartbeat_timeout_ms = 10'000;
  std::int64_t first_heartbeat_grace_ms = 300'000;
  std::int64_t role_vacancy_timeout_ms = 900'000;
  bool allow_shared_bench_gpu = false;
  bool colocate_learner_rollout = false;
  std::string log_level = "info";
  std::string log_format = "text";
  std::string nccl_socket_ifname;
  std::string control_interface;

  template <class V>
  void visit(V& v) {
    v({.key = "name",
       .doc = "Run id: names the run in the store, logs and metrics. Letters, digits, '_', '.' "
              "and '-' only."},
      name);
    v({.key = "seed",
       .doc = "Seed of every random choice of the run (task sampling, token sampling, input "
              "sets); a resumed run continues its random streams.",
       .min = 0},
      seed);
    v({.key = "checkpoint_dir",
       .doc = "Directory of the learner's atomic checkpoints; on a file system every learner node "
              "can reach in a multi-node run. Relative paths are relative to the manifest's "
              "directory."},
      checkpoint_dir);
    v({.key = "port_base",
       .unit = "port",
       .doc = "First TCP port of the run: the coordinator listens on +0, the compile-farm broker "
              "on +1 (clients) and +2 (workers), the bench-pool broker on +3 (clients) and +4 "
              "(workers); learner ranks meet on +10 (MASTER_PORT).",
       .min = 1024,
       .max = 65000},
      port_base);
    v({.key = "heartbeat_interval_ms",
       .unit = "ms",
       .doc = "How often every process tells its broker or the coordinator that it is alive.",
       .min = 10,
       .max = 60'000},
      heartbeat_interval_ms);
    v({.key = "heartbeat_timeout_ms",
       .unit = "ms",
       .doc = "Silence after which a peer counts as lost and its in-flight work is re-queued; "
              "must be longer than heartbeat_interval_ms.",
       .min = 100},
      heartbeat_timeout_ms);
    v({.key = "first_heartbeat_grace_ms",
       .unit = "ms",
       .doc = "Silence allowed before a new peer's first heartbeat: loading a model, starting CUDA "
              "and warming compile caches take minutes.",
       .min = 0},
      first_heartbeat_grace_ms);
    v({.key = "role_vacancy_timeout_ms",
       .unit = "ms",
       .doc = "How long the run may wait with no live learner, or no live rollout worker while no "
              "step is training, before it fails with the reason (exit 3; `cuda-agent train` "
              "resumes it) instead of waiting for ever; at least first_heartbeat_grace_ms + 2 x "
              "heartbeat_timeout_ms. 0: wait for ever.",
       .min = 0},
      role_vacancy_timeout_ms);
    v({.key = "allow_shared_bench_gpu",
       .doc = "false: a bench GPU must be dedicated to the bench. true lets a one-GPU machine give "
              "its GPU to the bench and other roles; timings are then marked untrustworthy."},
      allow_shared_bench_gpu);
    v({.key = "colocate_learner_rollout",
       .doc = "true allows one GPU to be given to both learner and rollout, which then time-share "
              "it like a hybrid engine; false keeps them on separate GPUs."},
      colocate_learner_rollout);
    v({.key = "log_level",
       .doc = "Least severe log level written.",
       .choices = {"trace", "debug", "info", "warn", "error"}},
      log_level);
    v({.key = "log_format",
       .doc = "'text' for people, 'json' (one object a line) for log collectors.",
       .choices = {"text", "json"}},
      log_format);
    v({.key = "nccl_socket_ifname",
       .doc = "Network interfaces NCCL uses between nodes, in NCCL_SOCKET_IFNAME's syntax ('ib0', "
              "'eth', '^lo,docker'); empty lets NCCL choose. The Slurm and Kubernetes files of "
              "`cuda-agent launch --emit` export it as NCCL_SOCKET_IFNAME to every node agent."},
      nccl_socket_ifname);
    v({.key = "control_interface",
       .doc = "Network interface for the control plane (the coordinator, brokers and workers over "
              "ZeroMQ), such as 'eth0'; empty: not set. The Slurm and Kubernetes files of "
              "`cuda-agent launch --emit` export it as CUDA_AGENT_CONTROL_INTERFACE to every node "
              "agent; the processes do not use it yet (they listen on every interface and reach "
              "their peers by the manifest's host names)."},
      control_interface);
  }
};

/// ZeroMQ CURVE keys of a secured run (DESIGN.md section 3). Either all three files are named or
/// none; none means plain TCP, acceptable only on a trusted network. Files are read with
/// read_curve_key_file (actors/curve_keys.h); relative paths are relative to the manifest.
struct SecurityOptions {
  static constexpr std::string_view kSection = "security";
  static constexpr std::string_view kDoc =
      "CURVE authentication and encryption of every TCP socket. Name all three key files or none "
      "(none: plain TCP, for a trusted network only). Make keys with `cuda-agent keys generate`.";

  std::string server_secret_key_file;
  std::string client_secret_key_file;
  std::string server_public_key_file;

  /// True when every key file is named (the run is secured).
  bool enabled() const {
    return !server_secret_key_file.empty() && !client_secret_key_file.empty() &&
           !server_public_key_file.empty();
  }

  template <class V>
  void visit(V& v) {
    v({.key = "server_secret_key_file",
       .doc = "Secret key file (NAME.key_secret) of the listening side: coordinator and brokers. "
              "Only the coordinator node needs it."},
      server_secret_key_file);
    v({.key = "client_secret_key_file",
       .doc = "Secret key file (NAME.key_secret) that workers, rollout and learner processes "
              "connect with; servers accept only this client key."},
      client_secret_key_file);
    v({.key = "server_public_key_file",
       .doc = "Public key file (NAME.key) of the servers, by which clients authenticate them; must "
              "match server_secret_key_file."},
      server_public_key_file);
  }
};

}  // namespace cuda_agent
