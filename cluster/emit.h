// Files that start a run under a cluster's own scheduler, rendered from a validated manifest:
// `cuda-agent launch MANIFEST --emit slurm DIR` and `cuda-agent launch MANIFEST --emit k8s DIR`.
// Both start exactly one node agent per node of the manifest,
//   cuda-agent node-agent --manifest M --host HOST
// which starts that node's processes of the launch plan (cluster/launch_plan.h) and keeps them
// running; these files only place the node agents.
//
//   Expected<std::vector<EmittedFile>> files = emit_files(EmitKind::kSlurm, manifest, options);
//   if (files) write_emitted_files("out/slurm", *files, /*force=*/false);
//
// Slurm (emit_slurm): one file, RUN.sbatch, an sbatch script for `sbatch RUN.sbatch`:
//   - the allocation: --job-name = [run] name, --nodes and --nodelist from the manifest's hosts
//     (which must then be the Slurm node names), one task per node, --exclusive (the plan owns
//     every GPU and port of its node), --gpus-per-node from [[nodes]] gpus. Nodes with different
//     GPU counts become the components of a heterogeneous job (`#SBATCH hetjob`), one per GPU
//     count, in order of first appearance, since --gpus-per-node applies to a whole component.
//     A one-node manifest whose host is a loopback name (localhost, 127.0.0.1, ::1) gets no
//     --nodelist: Slurm picks the node and the run's processes only talk among themselves.
//   - exports NCCL_NVLS_ENABLE=0, and NCCL_SOCKET_IFNAME / CUDA_AGENT_CONTROL_INTERFACE when
//     [run] nccl_socket_ifname / control_interface are set; srun passes them to every step.
//   - one `srun --nodes=1 --ntasks=1 --nodelist=HOST` step per node, in the background, running
//     its node agent with `--manifest EmitOptions::manifest_path --host HOST`; the script waits
//     for every step and exits with the status of the last one that failed (0 when none did).
//
// Kubernetes (emit_k8s): a directory for `kubectl apply -f DIR`:
//   configmap.yaml        RUN-manifest: manifest.toml, the manifest the pods run (below)
//   secret.yaml           RUN-curve-keys: the three [security] key files, base64, read now
//                         (only for a secured run; written with mode 0600)
//   service.yaml          RUN: headless, publishNotReadyAddresses; ports port_base+0..+5 and the
//                         plan's learner rendezvous (MASTER_PORT) and policy engine ports
//   statefulset-KIND.yaml RUN-KIND, one per node kind: nodes with the same gpus and roles;
//                         replicas = their count, `nvidia.com/gpu` limit = gpus
// RUN is [run] name as a DNS label; KIND names the roles ("coordinator" for the coordinator's
// node, else the roles joined by '-', with "-<N>gpu" added where two kinds share roles).
// Host mapping: the manifest's hosts are not names a pod can take, so the ConfigMap's manifest
// (kubernetes_manifest) renames node j of kind KIND to its pod's DNS name, RUN-KIND-j.RUN (the
// StatefulSet's ordinal j counts that kind's nodes in manifest order; the headless Service makes
// the name resolve in the namespace), and each pod runs
//   cuda-agent node-agent --manifest /etc/cuda-agent/manifest.toml --host $(POD_NAME).RUN
// Its key files become /etc/cuda-agent/keys/{server.key_secret,client.key_secret,server.key}
// (the Secret), relative paths become absolute under /var/lib/cuda-agent, absolute paths stay.
// Volumes: [store] dir and [run] checkpoint_dir are hostPath mounts at those paths (the files
// say why); /dev/shm is a memory-backed emptyDir (NCCL and torch need more than 64 MiB).
//
// Output is deterministic: it depends only on the arguments and, for the Secret, the key files.
// Threading: plain functions; write_emitted_files touches only its directory.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/manifest.h"
#include "core/error.h"

namespace cuda_agent {

/// What `--emit` renders.
enum class EmitKind { kSlurm, kKubernetes };

/// "slurm" or "k8s", the words `--emit` takes.
std::string_view to_string(EmitKind kind);

/// The EmitKind named `word`. Errors: emit.unknown_kind (kInvalidInput), naming the word and the
/// choices.
Expected<EmitKind> parse_emit_kind(std::string_view word);

struct EmitOptions {
  /// Slurm: the manifest path each node agent gets as --manifest; it must name the manifest on
  /// every node (the CLI passes the absolute path of its FILE). Empty: the embedded single-machine
  /// default, and the node agents get no --manifest. Not used by Kubernetes, whose pods read the
  /// ConfigMap.
  std::string manifest_path;
  /// Kubernetes: the container image of every pod; it must hold `cuda-agent` on PATH and whatever
  /// [model] path and [tasks] name that no volume provides. Empty: default_image().
  std::string image;
};

/// One file of the output, named relative to the output directory (no subdirectories).
struct EmittedFile {
  std::string name;
  std::string text;
  bool executable = false;  ///< written 0755 (the sbatch script), else 0644
  bool secret = false;      ///< written 0600 (the Secret holding CURVE keys); wins over executable
};

/// "cuda-agent:VERSION", this build's version.
std::string default_image();

/// The sbatch script (see the file comment). Errors: emit.bad_host (kInvalidInput) when a host
/// cannot be a Slurm node name (letters, digits, '.', '_', '-' only; a loopback name only in a
/// one-node manifest), naming the host and its node.
Expected<std::vector<EmittedFile>> emit_slurm(const Manifest& manifest, const EmitOptions& options);

/// The Kubernetes files (see the file comment), in the order listed there. Errors:
/// emit.key_file_unreadable (kIo) naming the [security] key and the file that cannot be read.
Expected<std::vector<EmittedFile>> emit_k8s(const Manifest& manifest, const EmitOptions& options);

/// emit_slurm or emit_k8s.
Expected<std::vector<EmittedFile>> emit_files(EmitKind kind, const Manifest& manifest,
                                              const EmitOptions& options);

/// Where the pods find things (see the file comment).
inline constexpr std::string_view kPodManifestPath = "/etc/cuda-agent/manifest.toml";
inline constexpr std::string_view kPodKeyDir = "/etc/cuda-agent/keys";
inline constexpr std::string_view kPodWorkDir = "/var/lib/cuda-agent";

/// The manifest the Kubernetes pods run: `manifest` with hosts renamed to pod DNS names, key files
/// in kPodKeyDir and relative paths under kPodWorkDir (options and `paths` alike). `file` and
/// `base_dir` name kPodManifestPath.
Manifest kubernetes_manifest(const Manifest& manifest);

/// What write_emitted_files did, for the CLI to print.
struct WrittenFiles {
  std::vector<std::filesystem::path> written;  ///< in the order given
  /// Entries that were in the directory before and are not among the files written (only
  /// possible with force): a stale StatefulSet there would still be applied with the rest.
  std::vector<std::filesystem::path> others;
};

/// Writes `files` into `dir` (created with its parents when missing), each atomically: a
/// temporary file in `dir`, flushed to disk, then renamed over the name. Refuses a `dir` that
/// exists and is not empty unless `force`; with `force`, files of the same names are replaced and
/// nothing else is touched. Errors: emit.dir_not_empty (kInvalidInput) naming the directory and
/// --force; emit.not_a_directory (kInvalidInput); emit.write_failed (kIo) naming the file and the
/// system's reason.
Expected<WrittenFiles> write_emitted_files(const std::filesystem::path& dir,
                                           const std::vector<EmittedFile>& files, bool force);

}  // namespace cuda_agent
