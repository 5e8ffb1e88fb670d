// Atomic, checksummed learner checkpoints in the Hugging Face layout (DESIGN.md section 7).
//
// A checkpoint is a directory <root>/step-<8 digits>/ holding
//   config.json, model.safetensors     the actor (Transformer::save: loads in cuda-agent-model
//                                      and in transformers)
//   critic/                            optional: config.json, model.safetensors,
//                                      value_head.safetensors
//   optimizer-rank-<r>.safetensors     MasterAdamW::state() of each rank (and
//                                      critic-optimizer-rank-<r>.safetensors)
//   trainer_state.json                 step, stage, policy_version, rng (torch's default CPU and
//                                      CUDA generators, hex), and the trainer's own keys
//   CHECKSUMS                          written last: digest and size of every other file
//
// CHECKSUMS is text: the line "# cuda-agent checkpoint v1 blake2b-256 of 64 MiB pieces", then
// one line per file, "<64 hex digits> <size in bytes> <path relative to the checkpoint>", sorted
// by path. A file's digest is BLAKE2b-256 (core/content_hash.h's hash) of the concatenated
// 32-byte BLAKE2b-256 digests of its 64 MiB pieces (the last one shorter; none for an empty
// file), so that pieces hash on all cores: one BLAKE2b stream runs at ~0.6 GB/s, slower than a
// node's disks, and an actor's model.safetensors is tens of GB.
//
// Writing (several ranks, one shared filesystem):
//   rank 0:    ASSIGN_OR_RETURN(auto s, CheckpointStaging::begin(root, step));
//              actor.save(s.path());  RETURN_IF_ERROR(s.add_trainer_state({...}));
//   barrier;   other ranks: ASSIGN_OR_RETURN(auto s, CheckpointStaging::attach(root, step));
//   every rank: RETURN_IF_ERROR(s.add_tensors(optimizer_file_name("", rank), opt.state()));
//   barrier;   rank 0: ASSIGN_OR_RETURN(std::string dir, s.seal());
// Everything goes to <root>/.tmp-step-<8 digits>-<pid>/ (pid of rank 0's process). Files added
// through add_* are fsynced as they are written and their digest is computed from the bytes
// written (kept in a hidden sidecar until seal); files written into path() by other code
// (Transformer::save) are fsynced and hashed by seal(). seal() writes and fsyncs CHECKSUMS,
// fsyncs every directory, renames the staging directory to step-<8 digits> (exchanging it
// atomically with an existing checkpoint of the same step where the filesystem allows) and
// fsyncs the root. A process killed at any moment leaves either the previous set of
// checkpoints or the new one complete, plus at worst a .tmp-* directory that loaders ignore.
//
// Reading: load_latest_checkpoint lists step-* newest first and returns the first whose files
// all match CHECKSUMS (a missing or unparsable CHECKSUMS, a missing file, a size or digest that
// differs: that checkpoint is skipped with a warning naming it and the file, and the previous
// one is tried). .tmp-step-* directories of a step older than the newest valid checkpoint are
// removed as it goes (a killed writer's leftovers).
//
// Errors: kIo ("checkpoint.io") naming the path and errno text; kNotFound ("checkpoint.none")
// when no valid checkpoint exists; kInvalidInput ("checkpoint.bad") for a checkpoint that does
// not verify (load_checkpoint) or a bad file name.
//
// Threading: a CheckpointStaging belongs to one thread; the free functions may run from any
// thread, but not concurrently with another process pruning or sealing the same root.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "model/safetensors.h"

namespace at {
class Tensor;
}

namespace cuda_agent {

/// "step-00000012".
std::string checkpoint_dir_name(std::uint64_t step);
/// "optimizer-rank-3.safetensors"; prefix "critic" -> "critic-optimizer-rank-3.safetensors".
std::string optimizer_file_name(std::string_view prefix, int rank);

/// The fields of trainer_state.json that every checkpoint has.
struct TrainerState {
  std::uint64_t step = 0;
  std::string stage;
  std::uint64_t policy_version = 0;
  /// The trainer's own keys (a JSON object), stored at the top level beside the fields above;
  /// it may not use the keys "format", "step", "stage", "policy_version" or "rng".
  nlohmann::json extra = nlohmann::json::object();
};

/// The state of torch's default generators: {"cpu": hex, "cuda": [hex per device]} ("cuda"
/// empty without a GPU).
nlohmann::json capture_rng_state();
/// Restores capture_rng_state()'s result (trainer_state["rng"]). A CUDA state for a device this
/// process lacks is an error; a checkpoint with fewer CUDA states than devices leaves the rest.
Status restore_rng_state(const nlohmann::json& rng);

class CheckpointStaging {
 public:
  /// Rank 0: creates <root> if needed and <root>/.tmp-step-<8 digits>-<pid>/, first removing
  /// leftover .tmp-step-* directories of the same step (one writer group per root).
  static Expected<CheckpointStaging> begin(const std::string& root, std::uint64_t step);
  /// Other ranks, after a barrier that follows begin(): the one staging directory of `step`
  /// under `root` (an error when there is none or more than one).
  static Expected<CheckpointStaging> attach(const std::string& root, std::uint64_t step);

  /// The staging directory: code such as Transformer::save may write into it (and into
  /// subdirectories of it) directly; seal() then fsyncs and hashes those files.
  const std::string& path() const { return path_; }
  std::uint64_t step() const { return step_; }
  /// Creates path()/name (and its parents) and returns it.
  Expected<std::string> subdir(const std::string& name) const;

  /// Writes path()/name (name relative, "/" separated, no "..", no leading "." component),
  /// fsynced, its digest recorded for seal(). Replaces an earlier file of that name.
  Status add_file(const std::string& name, std::string_view bytes) const;
  /// The same for a safetensors file (model/safetensors.h's format, tensors sorted by name).
  Status add_safetensors(const std::string& name,
                         const std::vector<SafetensorsWriteTensor>& tensors,
                         const std::map<std::string, std::string>& metadata = {}) const;
  /// Tensors of any device and of the dtypes safetensors knows (copied to the CPU first).
  Status add_tensors(const std::string& name, const std::map<std::string, at::Tensor>& tensors,
                     const std::map<std::string, std::string>& metadata = {}) const;
  /// trainer_state.json with the RNG state captured now.
  Status add_trainer_state(const TrainerState& state) const;

  /// Rank 0, after every rank's add_* returned (the caller's barrier): checksums, fsyncs and
  /// publishes the checkpoint; returns its final path. The staging object is spent afterwards.
  Expected<std::string> seal();
  /// Removes the staging directory (a failed save).
  Status abandon();

 private:
  CheckpointStaging(std::string root, std::string path, std::uint64_t step)
      : root_(std::move(root)), path_(std::move(path)), step_(step) {}
  std::string root_, path_;
  std::uint64_t step_ = 0;
};

struct CheckpointLoadOptions {
  /// Hash every file against CHECKSUMS (false: sizes only, for a quick listing). Default: true.
  bool verify_digests = true;
  /// Remove .tmp-step-* directories older than the checkpoint returned. Default: true.
  bool remove_stale_staging = true;
};

/// A verified checkpoint.
struct LoadedCheckpoint {
  std::string path;
  std::uint64_t step = 0;
  nlohmann::json trainer_state;      ///< the whole trainer_state.json
  std::vector<std::string> files;    ///< as listed in CHECKSUMS
  std::vector<std::string> skipped;  ///< newer checkpoints skipped, each with its reason

  bool has(const std::string& name) const;
  std::string file(const std::string& name) const { return path + "/" + name; }
  /// All tensors of a safetensors file of the checkpoint, copied to CPU tensors.
  Expected<std::map<std::string, at::Tensor>> load_tensors(const std::string& name) const;
};

/// Checks one checkpoint directory against its CHECKSUMS and reads its trainer_state.json.
/// Error kInvalidInput "checkpoint.bad" naming the checkpoint and the file at fault.
Expected<LoadedCheckpoint> load_checkpoint(const std::string& dir,
                                           const CheckpointLoadOptions& options = {});
/// The newest checkpoint under `root` that verifies; kNotFound "checkpoint.none" when none does
/// (its message lists what was skipped).
Expected<LoadedCheckpoint> load_latest_checkpoint(const std::string& root,
                                                  const CheckpointLoadOptions& options = {});
/// Steps of the step-* directories under `root`, newest first (not verified).
std::vector<std::uint64_t> list_checkpoints(const std::string& root);

struct PruneOptions {
  /// Checkpoints to keep, newest first by step (at least 1 is kept). Default: 3.
  std::size_t keep_last = 3;
  /// Steps never removed (e.g. a version a rollout engine still serves from).
  std::vector<std::uint64_t> protect_steps;
  /// How the newest valid checkpoint is found (it is always kept, even when keep_last newer
  /// ones exist that do not verify).
  CheckpointLoadOptions verify;
};
/// Removes older checkpoints (each renamed to a .tmp-* name, then deleted) and stale staging
/// directories. Returns the removed checkpoint paths.
Expected<std::vector<std::string>> prune_checkpoints(const std::string& root,
                                                     const PruneOptions& options = {});

}  // namespace cuda_agent
